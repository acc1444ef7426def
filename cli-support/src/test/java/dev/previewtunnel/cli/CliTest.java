package dev.previewtunnel.cli;

import dev.previewtunnel.local.http.LocalHttpServer;
import dev.previewtunnel.local.http.MetricsServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CliTest {
    @Command(name = "x")
    static final class X {
    }

    private final CommandSpec spec = new CommandLine(new X()).getCommandSpec();

    @TempDir
    Path tmp;

    @Test
    void humanDurations() {
        assertEquals("10m", Cli.human(Duration.ofSeconds(600)));
        assertEquals("24h", Cli.human(Duration.ofDays(1)));
        assertEquals("90s", Cli.human(Duration.ofSeconds(90)));
        assertEquals("100ms", Cli.human(Duration.ofMillis(100)));
    }

    @Test
    void shownValuesAreOneShortLine() {
        assertEquals("a b", Cli.shown("a\nb"));
        assertEquals("y".repeat(64) + "...", Cli.shown("y".repeat(100)));
        assertEquals("", Cli.shown(null));
    }

    @Test
    void argumentChecksAreUsageErrorsOfTheCommand() {
        ParameterException blank = assertInstanceOf(ParameterException.class,
                assertThrows(RuntimeException.class, () -> Cli.requireNonBlank(spec, " ", "--env")));
        assertSame(spec.commandLine(), blank.getCommandLine());
        assertEquals("--env must not be blank", blank.getMessage());
        assertEquals("--env must not contain control characters", assertThrows(ParameterException.class,
                () -> Cli.requireNonBlank(spec, "a\u0007", "--env")).getMessage());
        assertEquals("ok", Cli.requireNonBlank(spec, "ok", "--env"));

        Duration min = Duration.ofSeconds(1);
        Duration max = Duration.ofHours(24);
        assertEquals("--ttl must be at most 24h, got 48h", assertThrows(ParameterException.class,
                () -> Cli.requireRange(spec, Duration.ofDays(2), "--ttl", min, max)).getMessage());
        assertEquals("--ttl must be at least 1s, got 500ms", assertThrows(ParameterException.class,
                () -> Cli.requireRange(spec, Duration.ofMillis(500), "--ttl", min, max)).getMessage());
        assertEquals(Duration.ofHours(1), Cli.requireRange(spec, Duration.ofHours(1), "--ttl", min, max));
        // Without a command (direct calls, tests): still a usage error by exit code.
        assertEquals(ExitCodes.USAGE, ErrorHandling.exitCodeFor(
                assertThrows(RuntimeException.class, () -> Cli.requireNonBlank(null, "", "--env"))));
    }

    @Test
    void parseListenMessagesAndExitCodes() {
        InetSocketAddress a = Cli.parseListen(spec, "--listen", "127.0.0.1:0", 7443);
        assertEquals("127.0.0.1:0", Cli.hostPort(a));
        ParameterException bad = assertThrows(ParameterException.class,
                () -> Cli.parseListen(spec, "--listen", "nonsense", 7443));
        assertEquals("--listen must be HOST:PORT (e.g. 127.0.0.1:7443 or [::1]:7443), got 'nonsense': missing :PORT "
                + "(IPv6 needs brackets)", bad.getMessage());
        assertTrue(assertThrows(ParameterException.class, () -> Cli.parseListen(spec, "--bind", "x", 0))
                .getMessage().startsWith("--bind must be HOST:PORT (e.g. 127.0.0.1:0 or [::1]:0)"));
        // .invalid never resolves (RFC 6761): exit 2, as for a bind failure.
        CliException unresolved = assertThrows(CliException.class,
                () -> Cli.parseListen(spec, "--listen", "no-such-host.invalid:0", 7443));
        assertEquals(ExitCodes.UNREACHABLE, unresolved.exitCode());
        assertEquals("cannot resolve --listen host 'no-such-host.invalid'", unresolved.getMessage());
    }

    @Test
    void readableFileChecks() throws Exception {
        Path missing = tmp.resolve("missing.pem");
        CliException absent = assertThrows(CliException.class, () -> Cli.requireReadableFile(spec, missing,
                "--tls-cert"));
        assertEquals("--tls-cert file " + missing + " does not exist or is not a file", absent.getMessage());
        assertEquals(ExitCodes.REFUSED, absent.exitCode(), "a missing file is refused (exit 3), as documented");
        assertEquals(ExitCodes.REFUSED, assertThrows(CliException.class,
                () -> Cli.requireReadableFile(spec, tmp, "--tls-cert")).exitCode());
        Path file = Files.writeString(tmp.resolve("f"), "x");
        Cli.requireReadableFile(spec, file, "--tls-cert");
        if (!"root".equals(System.getProperty("user.name"))) { // root reads anything
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("-w-------"));
            CliException e = assertThrows(CliException.class, () -> Cli.requireReadableFile(spec, file, "--x"));
            assertEquals(ExitCodes.REFUSED, e.exitCode());
        }
    }

    @Test
    void printJsonWritesExactlyOneLine() {
        PrintStream old = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
        try {
            Cli.printJson(Cli.json().put("event", "ready").put("text", "a\nb"));
        } finally {
            System.setOut(old);
        }
        assertEquals("{\"event\":\"ready\",\"text\":\"a\\nb\"}" + System.lineSeparator(),
                buf.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aMetricsPortInUseIsExit2NamingTheAddressAndTheOption() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            InetSocketAddress listen = new InetSocketAddress("127.0.0.1", taken.getLocalPort());
            CliException e = assertThrows(CliException.class, () -> Cli.startMetrics(listen,
                    MetricsServer.newRegistry(), LocalHttpServer.Limits.defaults()).close());
            assertEquals(ExitCodes.UNREACHABLE, e.exitCode());
            assertTrue(e.getMessage().startsWith("cannot listen on 127.0.0.1:" + taken.getLocalPort()
                    + " (--metrics-listen): "), e.getMessage());
        }
    }
}
