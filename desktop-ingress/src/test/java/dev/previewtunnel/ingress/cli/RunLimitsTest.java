package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.cli.FakeEnvironment;
import dev.previewtunnel.cli.InProcessCli;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.cli.IngressCliHarness.RunningIngress;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.testing.Await;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static dev.previewtunnel.cli.InProcessCli.concat;
import static dev.previewtunnel.ingress.cli.IngressCliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The limits and timeouts of {@code run} as flags, PTUN_INGRESS_* variables and config-file keys: the help states
 * the real defaults, docs/security.md lists every key, the values reach the running ingress in precedence order,
 * the proxy enforces them, and out-of-range values stop the start with the key and the reason.
 */
class RunLimitsTest {

    @TempDir
    static Path shared;
    static TestStack stack;

    @TempDir
    Path tmp;
    @RegisterExtension
    final FakeEnvironment env = new FakeEnvironment();

    @BeforeAll
    static void start() throws Exception {
        stack = TestStack.start(shared);
    }

    @AfterAll
    static void stop() {
        if (stack != null) {
            stack.close();
        }
    }

    @Test
    void helpStatesTheDefaultsOfTheDefaultObjectsAndTheDocsListEveryKey() throws Exception {
        Map<String, String> defaults = LimitOptions.describe(IngressConfig.defaults(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), URI.create("ws://127.0.0.1:1/tunnel")));
        assertTrue(RunCommand.CONFIG_KEYS.containsAll(LimitOptions.KEYS), "each limit is a config-file key");
        InProcessCli.assertDefaultsDescribed(new CommandLine(new RunCommand()).getCommandSpec(), LimitOptions.KEYS,
                defaults, Files.readString(Path.of("..", "docs", "security.md")));
    }

    @Test
    void flagsOverEnvironmentOverConfigFileReachTheRunningIngress() throws Exception {
        String token = stack.token();
        TestStack.secretFile(tmp, "token", token + "\n");
        Path config = Files.writeString(tmp.resolve("ingress.json"), """
                {"gateway": "%s", "token-file": "token", "state-dir": "state", "control": true,
                 "stream-window": "512KiB", "request-head-timeout": "5s", "max-request-headers": "8KiB"}
                """.formatted(stack.url()));
        env.put("PTUN_INGRESS_STREAM_WINDOW", "1536KiB");
        env.put("PTUN_INGRESS_OPEN_TIMEOUT", "3s");
        RunningIngress running = RunningIngress.start("run", "--config", config.toString(),
                "--keepalive-interval", "7s", "--request-head-timeout", "9s", "--drain-timeout", "PT0.1S");
        try {
            running.readyLine();
            IngressConfig c = running.command.ingress().config();
            assertEquals(1536 * 1024, c.mux().streamWindow(), "environment over file");
            assertEquals(Duration.ofSeconds(9), c.requestHeadTimeout(), "flag over file");
            assertEquals(8 * 1024, c.maxRequestHead(), "from the file");
            assertEquals(Duration.ofSeconds(3), c.openTimeout(), "from the environment");
            assertEquals(Duration.ofSeconds(7), c.mux().pingInterval());
            assertEquals(MuxSettings.defaults().pingTimeout(), c.mux().pingTimeout(), "untouched: default");
            assertEquals(Duration.ofSeconds(5), c.connectTimeout(), "untouched: default");
            assertEquals(1, c.ioThreads(), "untouched: one event loop by default");
            JsonNode line = InProcessCli.logLine(running.captured.err(), "limits in effect");
            assertEquals("1536KiB", InProcessCli.keyValue(line, "stream-window"));
            assertEquals("9s", InProcessCli.keyValue(line, "request-head-timeout"));
            assertEquals("1", InProcessCli.keyValue(line, "io-threads"));
            assertEquals("2", InProcessCli.keyValue(line, "pool"));
            assertEquals("2", InProcessCli.keyValue(line, "pool-connections"));
            Await.until("the default pool's two connections on the one loop", Duration.ofSeconds(10),
                    () -> running.command.ingress().pool().status().connected() == 2);
        } finally {
            running.close();
        }
    }

    /**
     * Two browser-side limits set on the command line, seen from a client on the proxy port: a connection that
     * sends nothing is closed at the 1 s request-head deadline (the default 30 s would outlast the 5 s read
     * timeout), and a request head over 4 KiB gets the 400 bad_request page.
     */
    @Test
    void theRunningProxyEnforcesConfiguredLimits() throws Exception {
        RunningIngress running = RunningIngress.start("run", "--gateway", stack.url(), "--token", stack.token(),
                "--state-dir", tmp.resolve("s").toString(), "--no-control", "--grant",
                stack.grant("default", stack.app.port()), "--request-head-timeout", "1s",
                "--max-request-headers", "4KiB", "--drain-timeout", "PT0.1S");
        try {
            InetSocketAddress proxy = running.command.ingress().proxyAddress();
            try (Socket silent = new Socket()) {
                silent.connect(proxy, 5000);
                silent.setSoTimeout(5000);
                try (InputStream in = silent.getInputStream()) {
                    assertEquals(-1, in.read(), "closed at the configured request-head deadline");
                }
            }
            try (Socket big = new Socket()) {
                big.connect(proxy, 5000);
                big.setSoTimeout(5000);
                OutputStream out = big.getOutputStream();
                out.write(("GET http://localhost:" + stack.app.port() + "/hello HTTP/1.1\r\nHost: localhost:"
                        + stack.app.port() + "\r\nX-Padding: " + "a".repeat(6 * 1024) + "\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.flush();
                String response = new String(big.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
                assertTrue(response.startsWith("HTTP/1.1 400"), response);
                assertTrue(response.contains("bad_request"), response);
            }
        } finally {
            running.close();
        }
    }

    @Test
    void outOfRangeOrMalformedLimitsStopTheStartWithTheKeyAndTheReason() throws Exception {
        String[] base = {"run", "--gateway", stack.url(), "--token", stack.token(), "--state-dir", tmp.toString()};
        assertRefused(concat(base, "--request-head-timeout", "2h"), "--request-head-timeout must be at most 1h, got 2h");
        assertRefused(concat(base, "--max-request-headers", "1KiB"), "--max-request-headers must be at least 4KiB, got 1KiB");
        assertRefused(concat(base, "--max-browser-connections", "100", "--max-unauthenticated-connections", "200"),
                "--max-unauthenticated-connections must be at most 100, got 200");
        assertRefused(concat(base, "--local-request-timeout", "2h"), "--local-request-timeout must be at most 10m, got 2h");
        assertRefused(concat(base, "--stream-window", "1MB"), "invalid size '1MB'");
        assertRefused(concat(base, "--stream-window", "4MiB"), "--stream-window: 4MiB x the 1024 streams a tunnel "
                + "connection may carry is the connection window, which HTTP/2 caps at 2^31-1 bytes: lower it to at "
                + "most 2047KiB");
        env.put("PTUN_INGRESS_MAX_WEBSOCKET_MESSAGE", "128MiB");
        assertRefused(base, "max-websocket-message (from PTUN_INGRESS_MAX_WEBSOCKET_MESSAGE) must be at most 64MiB, "
                + "got 128MiB");
        env.clear();
        Path file = Files.writeString(tmp.resolve("c.json"), "{\"open-timeout\": \"soon\"}");
        assertRefused(concat(base, "--config", file.toString()),
                "open-timeout (from config file " + file + "): invalid duration 'soon'");
    }

    private static void assertRefused(String[] args, String expected) {
        Result r = run(args);
        assertEquals(1, r.exitCode(), () -> String.join(" ", args) + "\n" + r);
        assertTrue(r.cliErrorLine().contains(expected), () -> "expected '" + expected + "' in\n" + r);
    }
}
