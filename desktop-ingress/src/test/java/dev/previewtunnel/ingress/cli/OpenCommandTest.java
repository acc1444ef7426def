package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.cli.StateLock;
import dev.previewtunnel.ingress.ssh.SshDestination;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static dev.previewtunnel.ingress.cli.IngressCliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code open} and {@code ports} before they touch the network: help, and every wrong input a one-line error
 * (exit 1) naming the fix. The whole run through a real sshd and Chromium is security-spikes' OpenCommandRunTest.
 */
class OpenCommandTest {
    @TempDir
    Path dir;

    @Test
    void helpSaysWhatOpenDoesItsOutputAndExamples() {
        Result r = run("open", "--help");
        assertEquals(0, r.exitCode(), r::toString);
        String out = r.out().replaceAll("\\s+", " ");
        for (String text : List.of("Usage: desktop-ingress open", "ssh://[USER@]HOST[:PORT]", "--port=N|auto",
                "--ssh-option=KEY=VALUE", "--identity=FILE", "--remote-java=PATH", "--remote-gateway=COMMAND",
                "--browser=PATH", "--browser-arg=ARG", "--no-browser", "Java 17", "SHA-256",
                "http://preview.localhost/", "event (\"open\"), urls, proxy", "Examples:",
                "desktop-ingress open ssh://dev.example.com --port 5173", "Exit codes:")) {
            assertTrue(out.contains(text), () -> text + " missing from:\n" + r.out());
        }
    }

    @Test
    void wrongInputsAreOneLineUsageErrors() {
        String state = dir.toString();
        List<List<String>> cases = List.of(
                List.of("open", "ssh://-oProxyCommand=x", "--port", "5173"),
                List.of("open", "http://host", "--port", "5173"),
                List.of("open", "ssh://host", "--port", "0"),
                List.of("open", "ssh://host", "--port", "auto", "--port", "5173"),
                List.of("open", "ssh://host", "--port", "five"),
                List.of("open", "ssh://host"),
                List.of("open", "ssh://host", "--port", "5173", "--session", "a b"),
                List.of("open", "ssh://host", "--port", "5173", "--grant-ttl", "1s"),
                List.of("open", "ssh://host", "--port", "5173", "--listen", "0.0.0.0:0"),
                List.of("open", "ssh://host", "--port", "5173", "--browser", dir.resolve("no-browser").toString()),
                List.of("ports", "ssh://", "--state-dir", state));
        for (List<String> args : cases) {
            List<String> all = new java.util.ArrayList<>(args);
            if (!all.contains("--state-dir")) {
                all.addAll(List.of("--state-dir", state));
            }
            Result r = run(all.toArray(String[]::new));
            assertEquals(1, r.exitCode(), () -> args + ": " + r);
            assertEquals(1, r.errLines().size(), () -> args + ": one line: " + r);
            assertTrue(r.err().startsWith("desktop-ingress: "), () -> args + ": " + r);
        }
    }

    @Test
    void aSecondOpenOfTheSameHostOnTheSameStateDirectoryRefusesBeforeConnecting() throws Exception {
        SshDestination host = SshDestination.parse("ssh://dev.example.invalid");
        Path hostDir = dev.previewtunnel.ingress.open.OpenSession.hostDir(dir, host);
        java.nio.file.Files.createDirectories(hostDir);
        try (StateLock first = StateLock.acquire(hostDir, "desktop-ingress open of " + host.shown(), "x")) {
            Result r = run("open", "ssh://dev.example.invalid", "--port", "5173", "--no-browser", "--state-dir",
                    dir.toString(), "--connect-timeout", "1s", "--remote-gateway", "env-gateway");
            assertEquals(3, r.exitCode(), r::toString);
            assertEquals("desktop-ingress: state directory " + hostDir + " is in use by another desktop-ingress "
                    + "open of " + host.shown() + " (pid " + ProcessHandle.current().pid() + "); stop it, or give "
                    + "this one another --state-dir", r.cliErrorLine());
        }
    }

    @Test
    void theEnvironmentNameIsTheHostInDnsLabelCharacters() {
        assertEquals("ssh-dev-example-com", SshTargetOptions.environmentFor(SshDestination.parse("ssh://dev.example.com")));
        assertEquals("ssh---1", SshTargetOptions.environmentFor(SshDestination.parse("ssh://[::1]:2222")));
        assertEquals(63, SshTargetOptions.environmentFor(SshDestination.parse("ssh://" + "a".repeat(80))).length());
    }
}
