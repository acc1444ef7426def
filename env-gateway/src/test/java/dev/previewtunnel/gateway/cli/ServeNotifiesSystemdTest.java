package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.NotifyReceiver;
import dev.previewtunnel.gateway.hostile.GatewayProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.gateway.cli.CliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code env-gateway serve} in a child JVM as systemd starts a Type=notify unit: NOTIFY_SOCKET names a real AF_UNIX
 * datagram socket (no systemd runs on the test machine; the socket stands in for PID 1's end). READY=1 arrives once
 * the ready line is out, STOPPING=1 on SIGTERM, and the process still drains and exits 0.
 */
class ServeNotifiesSystemdTest {
    @TempDir
    Path tmp;

    @Test
    void readyOnceListeningStoppingOnSigterm() throws Exception {
        Path keys = tmp.resolve("keys");
        assertEquals(0, run("keys", "init", "--dir", keys.toString()).exitCode());
        Path socket = tmp.resolve("notify");
        try (NotifyReceiver systemd = new NotifyReceiver(socket.toString())) {
            List<String> command = GatewayProcess.javaCommand(List.of("-Xmx128m"));
            command.addAll(List.of("dev.previewtunnel.gateway.cli.GatewayMain", "serve", "--keys", keys.toString(),
                    "--env", "e1", "--listen", "127.0.0.1:0", "--state-dir", tmp.resolve("state").toString(),
                    "--audit-file", tmp.resolve("audit.jsonl").toString()));
            ProcessBuilder pb = new ProcessBuilder(command);
            pb.environment().keySet().removeIf(k -> k.startsWith("PTUN_"));
            pb.environment().put("NOTIFY_SOCKET", socket.toString());
            Path err = tmp.resolve("stderr");
            pb.redirectError(err.toFile());
            pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            Process gateway = pb.start();
            try {
                CompletableFuture<String> ready = CompletableFuture.supplyAsync(() -> {
                    try {
                        BufferedReader out = new BufferedReader(new InputStreamReader(gateway.getInputStream(),
                                StandardCharsets.UTF_8));
                        for (String l; (l = out.readLine()) != null; ) {
                            if (l.contains("\"ready\"")) {
                                return l;
                            }
                        }
                        return null;
                    } catch (java.io.IOException e) {
                        return null;
                    }
                });
                assertNotNull(ready.get(60, TimeUnit.SECONDS), () -> "no ready line; stderr: " + read(err));
                assertEquals("READY=1\nSTATUS=gateway serving\n", systemd.next());

                gateway.destroy(); // SIGTERM, as systemctl stop
                assertEquals("STOPPING=1\nSTATUS=gateway draining (signal)\n", systemd.next());
                assertTrue(gateway.waitFor(30, TimeUnit.SECONDS), "drained and exited");
                assertEquals(0, gateway.exitValue(), () -> read(err));
            } finally {
                gateway.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (java.io.IOException e) {
            return e.toString();
        }
    }
}
