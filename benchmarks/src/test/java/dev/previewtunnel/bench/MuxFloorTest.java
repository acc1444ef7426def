package dev.previewtunnel.bench;

import dev.previewtunnel.spikes.lab.LabProcess;
import dev.previewtunnel.spikes.lab.SelfSignedCertificate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The protocol's floor pair that bench/memory-floor.sh measures ({@link MuxFloor}): it must really forward, or its
 * idle figure would be a floor of nothing. Two child JVMs, a target in this one: hello byte, an echo byte for byte,
 * the half-close, a port the environment side was not given, a wrong token; over TLS, an echo and a client that
 * does not trust the certificate.
 */
class MuxFloorTest {
    private final List<LabProcess> processes = new ArrayList<>();
    private ServerSocket target;
    private Thread targetThread;

    @AfterEach
    void stop() throws Exception {
        for (LabProcess p : processes) {
            try {
                p.close();
            } catch (RuntimeException e) {
                // the others are closed all the same; LabProcess.destroyAll would catch what is left
            }
        }
        for (LabProcess p : processes) {
            assertFalse(p.tail(1 << 20).contains("LEAK:"), p.name() + ": " + p.tail(4000));
        }
        if (target != null) {
            target.close();
            targetThread.join(5_000);
        }
    }

    /** Writes 'H' on accept, then echoes until the client's end, then closes: one connection at a time. */
    private int startTarget() throws Exception {
        target = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        targetThread = new Thread(() -> {
            while (!target.isClosed()) {
                try (Socket s = target.accept()) {
                    OutputStream out = s.getOutputStream();
                    out.write('H');
                    s.getInputStream().transferTo(out);
                } catch (Exception e) {
                    // closed by the test, or a connection the floor dropped
                }
            }
        }, "floor-test-target");
        targetThread.start();
        return target.getLocalPort();
    }

    private LabProcess start(String name, Class<?> main, Map<String, String> env, Path dir, List<String> args) {
        // Unlike the measured floor, with a logging backend and the leak detector at its strictest: a leak report
        // must reach the log this test reads.
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Dio.netty.leakDetection.level=paranoid",
                "-cp", System.getProperty("java.class.path"), main.getName()));
        cmd.addAll(args);
        LabProcess p = LabProcess.start(name, cmd, env, dir, Lab.READY);
        processes.add(p);
        return p;
    }

    /**
     * Through the forwarded port: the target's hello byte, then {@code size} random bytes echoed byte for byte
     * until the target's end, which comes back only if the client's half-close went through.
     */
    private static void assertEchoedWithHalfClose(int localPort, int size, long seed) throws Exception {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), localPort)) {
            s.setSoTimeout(10_000);
            InputStream in = s.getInputStream();
            assertEquals('H', in.read());
            byte[] payload = new byte[size];
            new Random(seed).nextBytes(payload);
            Thread writer = new Thread(() -> { // written while the echo is read: the payload exceeds the buffers
                try {
                    s.getOutputStream().write(payload);
                    s.shutdownOutput();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            writer.start();
            byte[] echoed = in.readAllBytes();
            writer.join();
            assertArrayEquals(payload, echoed);
        }
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS) // a bound on a hang: each wait below is bounded, ~5 s here
    void forwardsAGrantedPortByteForByteAndRefusesOthers(@TempDir Path dir) throws Exception {
        int port = startTarget();
        int notGiven;
        try (ServerSocket other = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            notGiven = other.getLocalPort(); // listening, so only the environment side's policy can refuse it
            Map<String, String> env = Map.of(MuxFloor.TOKEN_ENV, MuxFloor.newToken());
            String url = start("env", MuxFloor.Env.class, env, dir, List.of(String.valueOf(port)))
                    .awaitReady(Duration.ofSeconds(30)).get("url").asText();
            var ports = start("desk", MuxFloor.Desk.class, env, dir,
                    List.of(url, "--loops", "2", String.valueOf(port), String.valueOf(notGiven)))
                    .awaitReady(Duration.ofSeconds(30)).get("ports");

            // A few connections first: the desktop side (--loops 2) accepts them round-robin over its two event
            // loops, each with its own tunnel connection, so both carry a stream.
            for (int i = 0; i < 4; i++) {
                try (Socket s = new Socket(InetAddress.getLoopbackAddress(), ports.get(0).asInt())) {
                    s.setSoTimeout(10_000);
                    assertEquals('H', s.getInputStream().read(), "connection " + i);
                }
            }
            assertEchoedWithHalfClose(ports.get(0).asInt(), 1 << 20, 7);
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), ports.get(1).asInt())) {
                s.setSoTimeout(10_000);
                assertEquals(-1, s.getInputStream().read(), "a port the environment side was not given");
            }
            LabProcess desk = processes.get(1);
            assertTrue(desk.tail(1 << 20).contains("policy_refused: port_not_allowed"), desk.tail(4000));
        }
    }

    /**
     * The mux-proxy path (finding 52): the desktop side's CONNECT port opens a stream with the session's credential
     * and relays it byte for byte, half-close included; a wrong credential is a 407 and a port the environment
     * side was not given a 502, both before any byte is relayed.
     */
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS) // a bound on a hang: ~5 s here
    void throughConnectItForwardsWithTheCredentialAndRefusesWithoutIt(@TempDir Path dir) throws Exception {
        int port = startTarget();
        try (ServerSocket other = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            String token = MuxFloor.newToken();
            Map<String, String> env = Map.of(MuxFloor.TOKEN_ENV, token);
            String url = start("env", MuxFloor.Env.class, env, dir, List.of(String.valueOf(port)))
                    .awaitReady(Duration.ofSeconds(30)).get("url").asText();
            int proxy = start("desk", MuxFloor.Desk.class, env, dir,
                    List.of(url, "--proxy", "--loops", "2", String.valueOf(port)))
                    .awaitReady(Duration.ofSeconds(30)).get("proxy").asInt();
            InetSocketAddress at = new InetSocketAddress("127.0.0.1", proxy);

            Route route = Route.proxied("mux-proxy", "floor", at, List.of(port), MuxFloor.ConnectFront.USER, token);
            byte[] payload = new byte[256 << 10];
            new Random(13).nextBytes(payload);
            for (int i = 0; i < 4; i++) { // both event loops, each with its own tunnel connection
                try (SocketChannel ch = route.open(0)) { // CONNECT, its 200, then the target's hello byte
                    ch.socket().setSoTimeout(10_000);
                    Thread writer = new Thread(() -> {
                        try {
                            Route.writeFully(ch, ByteBuffer.wrap(payload));
                            ch.shutdownOutput();
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    });
                    writer.start();
                    byte[] echoed = ch.socket().getInputStream().readAllBytes();
                    writer.join();
                    assertArrayEquals(payload, echoed, "connection " + i);
                }
            }
            IOException wrong = assertThrows(IOException.class, () -> Route.proxied("mux-proxy", "floor", at,
                    List.of(port), MuxFloor.ConnectFront.USER, token + "x").open(0));
            assertTrue(wrong.getMessage().contains("407"), wrong.getMessage());
            IOException notGiven = assertThrows(IOException.class, () -> Route.proxied("mux-proxy", "floor", at,
                    List.of(other.getLocalPort()), MuxFloor.ConnectFront.USER, token).open(0));
            assertTrue(notGiven.getMessage().contains("502"), notGiven.getMessage());
            LabProcess desk = processes.get(1);
            assertTrue(desk.tail(1 << 20).contains("policy_refused: port_not_allowed"), desk.tail(4000));
        }
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS) // a bound on a hang: ~6 s here
    void overTlsItForwardsAndAClientThatDoesNotTrustTheCertificateIsRefused(@TempDir Path dir) throws Exception {
        int port = startTarget();
        SelfSignedCertificate cert = SelfSignedCertificate.create(dir);
        Map<String, String> env = Map.of(MuxFloor.TOKEN_ENV, MuxFloor.newToken());
        String url = start("env", MuxFloor.Env.class, env, dir, List.of("--tls", cert.certPem().toString(),
                cert.keyPem().toString(), String.valueOf(port))).awaitReady(Duration.ofSeconds(30)).get("url").asText();
        assertTrue(url.startsWith("wss://127.0.0.1:"), url);
        var ports = start("desk", MuxFloor.Desk.class, env, dir,
                List.of(url, "--ca", cert.certPem().toString(), String.valueOf(port)))
                .awaitReady(Duration.ofSeconds(30)).get("ports");
        assertEchoedWithHalfClose(ports.get(0).asInt(), 64 << 10, 11);
        // The same server without --ca: a TLS client with the JDK's default trust, which does not know the
        // self-signed certificate, so the handshake fails and no tunnel connection comes up.
        LabProcess untrusting = start("desk-no-ca", MuxFloor.Desk.class, env, dir, List.of(url, String.valueOf(port)));
        assertThrows(RuntimeException.class, () -> untrusting.awaitReady(Duration.ofSeconds(30)));
        assertTrue(untrusting.process().waitFor(30, TimeUnit.SECONDS), "the desktop side ends when it cannot connect");
        assertNotEquals(0, untrusting.process().exitValue());
        assertTrue(untrusting.tail(8000).contains("unable to find valid certification path"), untrusting.tail(8000));
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void aWrongTokenIsRefused(@TempDir Path dir) throws Exception {
        int port = startTarget();
        String url = start("env", MuxFloor.Env.class, Map.of(MuxFloor.TOKEN_ENV, MuxFloor.newToken()), dir,
                List.of(String.valueOf(port))).awaitReady(Duration.ofSeconds(30)).get("url").asText();
        LabProcess desk = start("desk", MuxFloor.Desk.class, Map.of(MuxFloor.TOKEN_ENV, MuxFloor.newToken()), dir,
                List.of(url, String.valueOf(port)));
        assertThrows(RuntimeException.class, () -> desk.awaitReady(Duration.ofSeconds(30)));
        assertTrue(desk.process().waitFor(30, TimeUnit.SECONDS), "the desktop side ends when refused");
        assertNotEquals(0, desk.process().exitValue());
        assertTrue(desk.tail(4000).contains("token_refused"), desk.tail(4000));
    }
}
