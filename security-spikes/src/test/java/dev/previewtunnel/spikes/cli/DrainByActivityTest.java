package dev.previewtunnel.spikes.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.sampleapp.SampleApp;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 17 item 4, with the real jars: a stop drains by activity. Large downloads that keep moving bytes finish
 * byte-exact although they outlast the old fixed drains (10 s gateway, 2 s ingress); an idle tunnel is cut early
 * and the audit says so ({@code drain_cut} reason {@code idle}); a download still running at the drain's maximum
 * is cut and said to be ({@code drain_timeout}); the stopping gateway's metrics and admin ports are free for a
 * replacement while its drain still runs.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class DrainByActivityTest {
    private static final Duration CLI = Duration.ofSeconds(60);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long MULTIPLIER = 0x9E3779B97F4A7C15L; // the sample app's /bytes pattern
    private static final long MIB = 1 << 20;
    static SampleApp app;
    static Path dir;
    static Path keys;
    static Path token;
    static Path grant;

    @BeforeAll
    static void start() throws Exception {
        app = SampleApp.start("127.0.0.1", 0);
        dir = Files.createTempDirectory("ptun-drain");
        keys = dir.resolve("keys");
        assertEquals(0, CliProcess.run(CLI, "env-gateway", "keys", "init", "--dir", keys.toString())
                .process.exitValue());
        token = secret("token", CliProcess.run(CLI, "env-gateway", "token", "issue", "--keys", keys.toString(),
                "--env", "e").stdout().trim());
        grant = secret("grant", CliProcess.run(CLI, "env-gateway", "grant", "issue", "--keys", keys.toString(),
                "--env", "e", "--session", "default", "--target", "localhost:" + app.port(), "--ttl", "10m")
                .stdout().trim());
    }

    @AfterAll
    static void stop() throws Exception {
        app.close();
        CliProcess.deleteStateHome();
        try (var files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    @Test
    void aStoppingGatewayLetsMovingDownloadsFinishCutsTheIdleAndFreesItsPortsFirst() throws Exception {
        try (CliProcess gateway = CliProcess.start("env-gateway", "serve", "--keys", keys.toString(), "--env", "e",
                "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
                "--state-dir", dir.resolve("gw-state").toString())) {
            JsonNode gw = gateway.awaitReady(CLI);
            InetSocketAddress metrics = address(gw.get("metrics").asText());
            InetSocketAddress admin = address(gw.get("admin").asText());
            try (CliProcess ingress = ingress(gw.get("url").asText(), "ingress-a")) {
                JsonNode ready = ingress.awaitReady(CLI);
                // Three 40 MiB downloads read at 3 MiB/s each: about 13 s after the stop, past the old 10 s drain.
                List<Download> downloads = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    downloads.add(Download.start(ready, app.port(), 40 * MIB));
                }
                Socket idle = idleTunnel(ready, app.port());
                long t0 = System.nanoTime();
                gateway.process.destroy(); // SIGTERM
                List<CompletableFuture<Long>> reads = new ArrayList<>();
                for (Download d : downloads) {
                    reads.add(CompletableFuture.supplyAsync(() -> d.readRestPaced(3 * MIB)));
                }
                // The replacement's listeners: free while the old gateway still drains.
                awaitBindable(metrics, Duration.ofSeconds(5));
                awaitBindable(admin, Duration.ofSeconds(5));
                long portsFreeMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                long idleCutMillis = awaitClosed(idle, Duration.ofSeconds(30)) - t0;

                for (int i = 0; i < reads.size(); i++) {
                    assertEquals(40 * MIB, reads.get(i).get(90, TimeUnit.SECONDS),
                            "download " + i + " finished byte-exact during the gateway's drain");
                }
                long downloadsMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                assertEquals(0, gateway.awaitExit(CLI), gateway.stderr());
                long exitMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                List<JsonNode> cuts = events(gateway, "drain_cut");
                assertEquals(1, cuts.size(), () -> "one stream cut, the idle one: " + cuts);
                assertEquals("idle", cuts.get(0).path("reason").asText(), cuts::toString);
                JsonNode finished = events(gateway, "drain_finished").get(0);
                assertEquals(4, finished.get("streams").asInt(), finished::toString);
                assertEquals(3, finished.get("finished").asInt(), finished::toString);
                assertEquals(1, finished.get("cutIdle").asInt(), finished::toString);
                assertEquals(0, finished.get("cutAtMaximum").asInt(), finished::toString);
                // Measured from before the SIGTERM, the ports' release is compared with the drain's own length,
                // measured inside the process from its start: free before the drain ended, not after.
                assertTrue(portsFreeMillis < finished.get("millis").asLong(), "ports free after "
                        + portsFreeMillis + " ms, the drain took " + finished.get("millis") + " ms");
                assertTrue(downloadsMillis > 10_000, "the downloads outlasted the old fixed drain: " + downloadsMillis);
                System.out.printf("{\"test\":\"gateway_drain_by_activity\",\"portsFreeMillis\":%d,"
                                + "\"idleCutMillis\":%d,\"downloadsMillis\":%d,\"exitMillis\":%d,\"drainMillis\":%d}%n",
                        portsFreeMillis, TimeUnit.NANOSECONDS.toMillis(idleCutMillis), downloadsMillis, exitMillis,
                        finished.get("millis").asLong());
            }
        }
    }

    @Test
    void aStoppingIngressLetsMovingDownloadsFinishAndCutsTheIdle() throws Exception {
        try (CliProcess gateway = CliProcess.start("env-gateway", "serve", "--keys", keys.toString(), "--env", "e",
                "--listen", "127.0.0.1:0")) {
            String url = gateway.awaitReady(CLI).get("url").asText();
            try (CliProcess ingress = ingress(url, "ingress-b", "--metrics-listen", "127.0.0.1:0")) {
                JsonNode ready = ingress.awaitReady(CLI);
                InetSocketAddress proxy = address("http://" + ready.get("proxy").asText());
                InetSocketAddress metrics = address(ready.get("metrics").asText());
                // Three 16 MiB downloads at 3 MiB/s each: about 5 s after the stop, past the old 2 s drain.
                List<Download> downloads = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    downloads.add(Download.start(ready, app.port(), 16 * MIB));
                }
                Socket idle = idleTunnel(ready, app.port());
                long t0 = System.nanoTime();
                ingress.process.destroy(); // SIGTERM
                List<CompletableFuture<Long>> reads = new ArrayList<>();
                for (Download d : downloads) {
                    reads.add(CompletableFuture.supplyAsync(() -> d.readRestPaced(3 * MIB)));
                }
                // A replacement ingress could bind the proxy and metrics addresses while this one drains.
                awaitBindable(proxy, Duration.ofSeconds(5));
                awaitBindable(metrics, Duration.ofSeconds(5));
                long portsFreeMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                long idleCutMillis = TimeUnit.NANOSECONDS.toMillis(awaitClosed(idle, Duration.ofSeconds(30)) - t0);
                for (int i = 0; i < reads.size(); i++) {
                    assertEquals(16 * MIB, reads.get(i).get(90, TimeUnit.SECONDS),
                            "download " + i + " finished byte-exact during the ingress's drain");
                }
                long downloadsMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                assertEquals(0, ingress.awaitExit(CLI), ingress.stderr());
                List<JsonNode> cuts = events(ingress, "drain_cut");
                assertEquals(1, cuts.size(), () -> "one browser connection cut, the idle one: " + cuts);
                assertEquals("idle", cuts.get(0).path("reason").asText(), cuts::toString);
                JsonNode finished = events(ingress, "drain_finished").get(0);
                assertEquals(1, finished.get("cutIdle").asInt(), finished::toString);
                assertEquals(0, finished.get("cutAtMaximum").asInt(), finished::toString);
                assertTrue(portsFreeMillis < finished.get("millis").asLong(), "ports free after "
                        + portsFreeMillis + " ms, the drain took " + finished.get("millis") + " ms");
                System.out.printf("{\"test\":\"ingress_drain_by_activity\",\"portsFreeMillis\":%d,"
                                + "\"idleCutMillis\":%d,\"downloadsMillis\":%d,\"drainMillis\":%d}%n", portsFreeMillis,
                        idleCutMillis, downloadsMillis, finished.get("millis").asLong());
            }
        }
    }

    @Test
    void aDownloadStillMovingAtTheDrainMaximumIsCutAndSaidToBe() throws Exception {
        try (CliProcess gateway = CliProcess.start("env-gateway", "serve", "--keys", keys.toString(), "--env", "e",
                "--listen", "127.0.0.1:0", "--drain-timeout", "3s")) {
            String url = gateway.awaitReady(CLI).get("url").asText();
            try (CliProcess ingress = ingress(url, "ingress-c")) {
                JsonNode ready = ingress.awaitReady(CLI);
                Download slow = Download.start(ready, app.port(), 40 * MIB); // 1 MiB/s: about 39 s to go
                long t0 = System.nanoTime();
                gateway.process.destroy(); // SIGTERM
                long read = slow.readRestPaced(MIB);
                long cutMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                assertTrue(read < 40 * MIB, "the download was cut at the maximum, " + read + " bytes arrived");
                assertEquals(0, gateway.awaitExit(CLI), gateway.stderr());
                List<JsonNode> cuts = events(gateway, "drain_cut");
                assertEquals(1, cuts.size(), cuts::toString);
                assertEquals("drain_timeout", cuts.get(0).path("reason").asText(), cuts::toString);
                assertEquals("localhost:" + app.port(), cuts.get(0).path("target").asText(), cuts::toString);
                System.out.printf("{\"test\":\"gateway_drain_maximum\",\"drainTimeout\":\"3s\",\"cutMillis\":%d,"
                        + "\"bytesArrived\":%d}%n", cutMillis, read);
            }
        }
    }

    private static CliProcess ingress(String gatewayUrl, String state, String... more) throws IOException {
        List<String> args = new ArrayList<>(List.of("run", "--gateway", gatewayUrl, "--token-file", token.toString(),
                "--grant-file", grant.toString(), "--state-dir", dir.resolve(state).toString(), "--pool", "1",
                "--no-control"));
        args.addAll(List.of(more));
        return CliProcess.start("desktop-ingress", args.toArray(String[]::new));
    }

    /** A large response through the proxy, its first MiB read (so it is moving when the stop comes). */
    private record Download(Socket socket, long size, long[] read) {
        static Download start(JsonNode ready, int port, long size) throws IOException {
            Socket s = connect(ready);
            String target = "localhost:" + port;
            s.getOutputStream().write(("GET http://" + target + "/bytes?n=" + size + " HTTP/1.1\r\nHost: " + target
                    + "\r\n" + auth(ready) + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            String head = readHead(s.getInputStream());
            assertTrue(head.startsWith("HTTP/1.1 200"), head);
            Download d = new Download(s, size, new long[1]);
            d.readUpTo(MIB, Long.MAX_VALUE);
            return d;
        }

        /** Reads to the end at about {@code bytesPerSecond}, checking every byte; returns the bytes of the body. */
        long readRestPaced(long bytesPerSecond) {
            try (socket) {
                readUpTo(Long.MAX_VALUE, bytesPerSecond);
            } catch (IOException e) {
                // cut: what arrived is the answer
            }
            return read[0];
        }

        private void readUpTo(long limit, long bytesPerSecond) throws IOException {
            InputStream in = socket.getInputStream();
            byte[] buf = new byte[32 * 1024];
            long start = System.nanoTime();
            long from = read[0];
            while (read[0] < limit) {
                // Pacing, not waiting for a condition: the reader is a deliberately slow browser.
                if (bytesPerSecond != Long.MAX_VALUE) {
                    long wait = start + (read[0] - from) * 1_000_000_000L / bytesPerSecond - System.nanoTime();
                    if (wait > 0) {
                        LockSupport.parkNanos(wait);
                    }
                }
                int n = in.read(buf, 0, (int) Math.min(buf.length, limit - read[0]));
                if (n < 0) {
                    return;
                }
                for (int i = 0; i < n; i++) {
                    if (buf[i] != (byte) (((read[0] + i) * MULTIPLIER) >>> 56)) {
                        throw new AssertionError("byte " + (read[0] + i) + " differs from the served pattern");
                    }
                }
                read[0] += n;
            }
        }
    }

    /** A CONNECT tunnel to the target that then carries nothing: idle from the first byte. */
    private static Socket idleTunnel(JsonNode ready, int port) throws IOException {
        Socket s = connect(ready);
        String target = "localhost:" + port;
        s.getOutputStream().write(("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n" + auth(ready)
                + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        String head = readHead(s.getInputStream());
        assertTrue(head.startsWith("HTTP/1.1 200"), head);
        return s;
    }

    /** Waits (bounded) until the peer closes {@code s}; returns System.nanoTime() at that moment. */
    private static long awaitClosed(Socket s, Duration timeout) throws IOException {
        try (s) {
            s.setSoTimeout((int) timeout.toMillis());
            try {
                int b = s.getInputStream().read();
                assertEquals(-1, b, "the idle tunnel carried nothing");
            } catch (SocketTimeoutException e) {
                throw new AssertionError("the idle tunnel was not closed within " + timeout);
            } catch (IOException reset) {
                // closed with a reset: closed all the same
            }
            return System.nanoTime();
        }
    }

    private static void awaitBindable(InetSocketAddress address, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try (ServerSocket s = new ServerSocket()) {
                s.setReuseAddress(true);
                s.bind(address);
                return;
            } catch (IOException taken) {
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError(address + " still taken " + timeout + " after the stop");
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
            }
        }
    }

    private static Socket connect(JsonNode ready) throws IOException {
        InetSocketAddress proxy = address("http://" + ready.get("proxy").asText());
        Socket s = new Socket(proxy.getAddress(), proxy.getPort());
        s.setSoTimeout(60_000);
        return s;
    }

    private static String auth(JsonNode ready) throws IOException {
        JsonNode c = JSON.readTree(Files.readString(Path.of(ready.get("credentialsFile").asText())));
        return "Proxy-Authorization: Basic " + Base64.getEncoder().encodeToString((c.get("username").asText() + ":"
                + c.get("password").asText()).getBytes(StandardCharsets.UTF_8));
    }

    private static String readHead(InputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                break;
            }
            head.append((char) b);
        }
        return head.toString();
    }

    private static InetSocketAddress address(String url) throws IOException {
        URI u = URI.create(url);
        return new InetSocketAddress(InetAddress.getByName(u.getHost()), u.getPort());
    }

    /** The audit events {@code event} a process wrote on stderr (top-level JSON field "event"). */
    private static List<JsonNode> events(CliProcess p, String event) throws IOException {
        List<JsonNode> out = new ArrayList<>();
        for (String line : p.stderrLines()) {
            if (line.startsWith("{")) {
                JsonNode json = JSON.readTree(line);
                if (event.equals(json.path("event").asText())) {
                    out.add(json);
                }
            }
        }
        return out;
    }

    private static Path secret(String name, String content) throws IOException {
        Path file = dir.resolve(name);
        Files.writeString(file, content + "\n");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        return file;
    }
}
