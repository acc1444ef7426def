package dev.previewtunnel.gateway.hostile;

import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.mux.local.FatalErrors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.OutputStream;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16, item 2: out of memory ends the real gateway process promptly and with a non-zero status, never a zombie
 * that holds its port and serves nobody. Both run the jar's main class in a child JVM with the shipped flags
 * ({@link FatalErrors#JVM_FLAGS}); nothing in the production classes exists for these tests.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class FatalErrorExitTest {
    private static final String ENV = "env-oom";
    private static final Duration PROMPTLY = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    /**
     * Heap: the real gateway, serving, in a JVM whose heap another thread then exhausts ({@link HeapHogGatewayMain};
     * a tunnel peer can no longer do it since PONGs are answered one at a time). -XX:+ExitOnOutOfMemoryError must end
     * the process (HotSpot's status 3) instead of leaving a gateway that holds its port with no heap.
     */
    @Test
    void heapExhaustionEndsTheProcess() throws Exception {
        KeyDirectory.init(dir.resolve("keys"));
        Path trigger = dir.resolve("hog-now");
        try (GatewayProcess gateway = GatewayProcess.start(HeapHogGatewayMain.class.getName(), dir,
                dir.resolve("keys"), ENV, List.of("-Xmx64m", "-Dhog.trigger=" + trigger))) {
            assertTrue(gateway.process.isAlive(), "the gateway started and is serving");
            long started = System.nanoTime();
            java.nio.file.Files.createFile(trigger);
            boolean exited = gateway.process.waitFor(PROMPTLY.toMillis(), TimeUnit.MILLISECONDS);
            System.out.printf("OOM heap: gateway %s after %d ms%n",
                    exited ? "exited " + gateway.process.exitValue() : "still running",
                    GatewayProcess.elapsedSince(started).toMillis());
            assertTrue(exited, "the gateway did not exit within " + PROMPTLY + " of running out of heap");
            assertEquals(3, gateway.process.exitValue(), "HotSpot's status for -XX:+ExitOnOutOfMemoryError");
        }
    }

    /**
     * Direct memory, which the JVM flag does not see (the JDK, or Netty, throws it, not the VM): with
     * -XX:MaxDirectMemorySize=1m a socket read soon cannot get a buffer; Netty turns that into exceptionCaught inside
     * the pipeline, and FatalErrors must end the process with its status instead of only the connection.
     */
    @Test
    void directMemoryExhaustionInsideAHandlerEndsTheProcess() throws Exception {
        KeyDirectory keys = KeyDirectory.init(dir.resolve("keys"));
        String token = new GrantIssuer(keys.signingKey(), Clock.systemUTC()).issueConnectionToken(ENV,
                Duration.ofHours(1));
        try (GatewayProcess gateway = GatewayProcess.start(dir, dir.resolve("keys"), ENV,
                List.of("-Xmx64m", "-XX:MaxDirectMemorySize=1m"))) {
            long started = System.nanoTime();
            List<Socket> sockets = new java.util.ArrayList<>();
            try {
                // Authenticated connections each send most of one 250,000-byte WebSocket message (within the
                // 256KiB limit): the decoder holds the incomplete frame in direct memory until the rest arrives,
                // so a few connections exhaust 1 MiB inside a socket read.
                byte[] head = {(byte) 0x82, (byte) (0x80 | 127), 0, 0, 0, 0, 0, 3, (byte) 0xd0, (byte) 0x90,
                        0, 0, 0, 0};
                for (int i = 0; i < 20 && gateway.process.isAlive(); i++) {
                    Socket s = new Socket();
                    sockets.add(s);
                    try {
                        AnswerFloodTest.Flooder.upgrade(s, gateway.port(), token);
                        OutputStream out = s.getOutputStream();
                        out.write(head);
                        out.write(new byte[200_000]);
                        out.flush();
                    } catch (java.io.IOException | AssertionError goneOrRefused) {
                        break; // the gateway ended (or closed this one): the wait below tells which
                    }
                }
                boolean exited = gateway.process.waitFor(PROMPTLY.toMillis(), TimeUnit.MILLISECONDS);
                System.out.printf("OOM direct: gateway %s after %d ms and %d connections%n",
                        exited ? "exited " + gateway.process.exitValue() : "still running",
                        GatewayProcess.elapsedSince(started).toMillis(), sockets.size());
                assertTrue(exited, () -> "the gateway did not exit within " + PROMPTLY + "; stderr: " + tail(gateway));
                assertEquals(FatalErrors.EXIT_STATUS, gateway.process.exitValue());
                assertTrue(gateway.stderr().contains("\"event\":\"fatal_error\""), "stderr says why");
            } finally {
                for (Socket s : sockets) {
                    s.close();
                }
            }
        }
    }

    private static String tail(GatewayProcess p) {
        try {
            String err = p.stderr();
            return err.length() > 3000 ? err.substring(err.length() - 3000) : err;
        } catch (java.io.IOException e) {
            return e.toString();
        }
    }
}
