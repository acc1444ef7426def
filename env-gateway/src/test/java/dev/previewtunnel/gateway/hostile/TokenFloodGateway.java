package dev.previewtunnel.gateway.hostile;

import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayLimits;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.channel.EventLoopGroup;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

/**
 * One gateway on 127.0.0.1:0 for the per-token flood tests: a fresh key directory, an issuer of connection tokens
 * and grants for its environment, a client event loop, a raw-socket upgrade for exact statuses, and the CPU time
 * the gateway's own threads (named {@code ptun-gateway*}) have used, which is what a flood costs the gateway as
 * opposed to the attacking client in the same JVM. Everything is loopback.
 */
final class TokenFloodGateway implements AutoCloseable {
    static final String ENV = "env-flood";
    static final Duration TIMEOUT = Duration.ofSeconds(10);

    final KeyDirectory keys;
    final GrantIssuer issuer;
    final Transports transports = Transports.best();
    final EventLoopGroup clientGroup;
    /** The honest client's own loop, so its latencies are not the attacking client's queueing. */
    final EventLoopGroup honestGroup;
    final GatewayServer gateway;

    TokenFloodGateway(Path dir, UnaryOperator<GatewayLimits> limits) throws Exception {
        this.keys = KeyDirectory.init(dir.resolve("keys"));
        this.issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        GatewayConfig base = GatewayConfig.defaults(ENV, new InetSocketAddress("127.0.0.1", 0));
        GatewayConfig config = base.withLimits(limits.apply(base.limits()));
        this.clientGroup = transports.newGroup(2, "flood-test-client");
        this.honestGroup = transports.newGroup(1, "flood-test-honest");
        try {
            this.gateway = GatewayServer.start(config, keys.verificationKeys(), null, new SimpleMeterRegistry());
        } catch (Exception | Error e) {
            clientGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            honestGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw e;
        }
    }

    String newToken() {
        return issuer.issueConnectionToken(ENV, Duration.ofHours(1));
    }

    String grant(String session, int port) {
        return issuer.issueGrant(GrantSpec.tcp(ENV, session, "127.0.0.1", port), Duration.ofMinutes(5));
    }

    /** A grant whose signature no longer matches (one signature character changed): verifying it costs a check. */
    static String badSignature(String grant) {
        int sig = grant.lastIndexOf('.') + 1;
        int at = sig + (grant.length() - sig) / 2;
        char c = grant.charAt(at) == 'A' ? 'B' : 'A';
        return grant.substring(0, at) + c + grant.substring(at + 1);
    }

    URI url() {
        return URI.create(gateway.url(false));
    }

    TunnelConnection connect(String token) throws Exception {
        return connect(clientGroup, token);
    }

    /** A connection on the honest client's own loop. */
    TunnelConnection connectHonest(String token) throws Exception {
        return connect(honestGroup, token);
    }

    private TunnelConnection connect(EventLoopGroup group, String token) throws Exception {
        return new TunnelClient(group, transports.socketChannel(), MuxSettings.defaults())
                .connect(url(), token, null, Duration.ofSeconds(5)).get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    }

    /** CPU nanoseconds used so far by the gateway's threads (event loops and its DNS pool). */
    static long gatewayCpuNanos() {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long total = 0;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("ptun-gateway")) {
                long cpu = threads.getThreadCpuTime(t.getId());
                total += Math.max(0, cpu);
            }
        }
        return total;
    }

    /** The status line code and body of the answer to a tunnel upgrade carrying {@code token}, on a fresh socket. */
    record Answer(int status, String body) {
    }

    Answer rawUpgrade(String token) throws IOException {
        InetSocketAddress to = gateway.address();
        try (Socket socket = new Socket()) {
            socket.connect(to, 5000);
            socket.setSoTimeout((int) TIMEOUT.toMillis());
            String request = "GET /tunnel HTTP/1.1\r\n"
                    + "Host: 127.0.0.1:" + to.getPort() + "\r\n"
                    + "Upgrade: websocket\r\n"
                    + "Connection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                    + "Sec-WebSocket-Version: 13\r\n"
                    + "Sec-WebSocket-Protocol: ptun.v1\r\n"
                    + "Authorization: Bearer " + token + "\r\n\r\n";
            socket.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
            InputStream in = socket.getInputStream();
            String status = readLine(in);
            if (status == null) {
                throw new IOException("connection closed without a response");
            }
            int code = Integer.parseInt(status.split(" ", 3)[1]);
            int length = -1;
            for (String line = readLine(in); line != null && !line.isEmpty(); line = readLine(in)) {
                if (line.toLowerCase().startsWith("content-length:")) {
                    length = Integer.parseInt(line.substring(15).trim());
                }
            }
            String body = length < 0 ? "" : new String(in.readNBytes(length), StandardCharsets.UTF_8);
            return new Answer(code, body);
        }
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) >= 0) {
            if (b == '\n') {
                String s = line.toString(StandardCharsets.ISO_8859_1);
                return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
            }
            line.write(b);
        }
        return line.size() == 0 ? null : line.toString(StandardCharsets.ISO_8859_1);
    }

    @Override
    public void close() {
        try {
            gateway.close();
        } finally {
            clientGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            honestGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}
