package dev.previewtunnel.bench;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;

/**
 * How the client in the runner reaches target port {@code i}: straight to it ({@code direct}), to the local end of
 * an {@code ssh -L} forward ({@code ssh -L}), or through the ingress proxy with a {@code CONNECT} carrying the
 * session credential (the tunnel). After {@link #open} the channel is positioned after the target's hello byte:
 * raw TCP to the target from there on.
 */
final class Route {
    final String key;   // direct, ssh, dt, dt-aes, ws, wss
    final String label; // what the table shows
    private final List<InetSocketAddress> addresses; // per target port: where the client connects
    private final List<byte[]> connectRequests;      // per target port: the CONNECT head, or null
    /** A client's FIN reaches the target as a half-close, the other direction staying open. */
    final boolean halfClose;

    private Route(String key, String label, List<InetSocketAddress> addresses, List<byte[]> connectRequests,
                  boolean halfClose) {
        this.key = key;
        this.label = label;
        this.addresses = addresses;
        this.connectRequests = connectRequests;
        this.halfClose = halfClose;
    }

    static Route plain(String key, String label, List<Integer> ports) {
        return plain(key, label, ports, true);
    }

    static Route plain(String key, String label, List<Integer> ports, boolean halfClose) {
        return new Route(key, label, ports.stream().map(p -> new InetSocketAddress("127.0.0.1", p)).toList(), null,
                halfClose);
    }

    static Route proxied(String key, String label, InetSocketAddress proxy, List<Integer> targetPorts,
                         String username, String password) {
        String auth = basicAuthorization(username, password);
        List<byte[]> heads = targetPorts.stream().map(p -> ("CONNECT localhost:" + p + " HTTP/1.1\r\n"
                + "Host: localhost:" + p + "\r\n"
                + "Proxy-Authorization: " + auth + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII)).toList();
        return new Route(key, label, targetPorts.stream().map(p -> proxy).toList(), heads, true);
    }

    /** A {@code Proxy-Authorization} value of the Basic scheme (RFC 7617). */
    static String basicAuthorization(String username, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((username + ":" + password)
                .getBytes(StandardCharsets.UTF_8));
    }

    int ports() {
        return addresses.size();
    }

    boolean proxied() {
        return connectRequests != null;
    }

    InetSocketAddress address(int port) {
        return addresses.get(port % addresses.size());
    }

    /** The CONNECT request head for target port {@code port}, or null when the route is not a proxy. */
    byte[] connectRequest(int port) {
        return connectRequests == null ? null : connectRequests.get(port % connectRequests.size());
    }

    /** Blocking open: TCP connect, CONNECT and its 200 when proxied, then the target's hello byte. */
    SocketChannel open(int port) throws IOException {
        SocketChannel ch = SocketChannel.open();
        try {
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            ch.connect(address(port));
            ByteBuffer buf = ByteBuffer.allocate(2048);
            byte[] head = connectRequest(port);
            if (head != null) {
                writeFully(ch, ByteBuffer.wrap(head));
                int end;
                while ((end = headEnd(buf)) < 0) {
                    if (!buf.hasRemaining()) {
                        throw new IOException("proxy answer head too long");
                    }
                    if (ch.read(buf) < 0) {
                        throw new EOFException("proxy closed before answering CONNECT");
                    }
                }
                String status = new String(buf.array(), 0, Math.min(end, 64), StandardCharsets.US_ASCII);
                if (!status.startsWith("HTTP/1.1 200")) {
                    throw new IOException("CONNECT refused: " + new String(buf.array(), 0, buf.position(),
                            StandardCharsets.US_ASCII).lines().limit(12).toList());
                }
                buf.flip().position(end);
                buf.compact();
            }
            while (buf.position() < 1) {
                if (ch.read(buf) < 0) {
                    throw new EOFException("target closed before its hello byte");
                }
            }
            if (buf.get(0) != BenchTarget.HELLO || buf.position() != 1) {
                throw new IOException("unexpected first bytes from the target");
            }
            return ch;
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
    }

    /** Index just past {@code \r\n\r\n} in buf[0, position), or -1. */
    static int headEnd(ByteBuffer buf) {
        byte[] a = buf.array();
        for (int i = 3; i < buf.position(); i++) {
            if (a[i] == '\n' && a[i - 1] == '\r' && a[i - 2] == '\n' && a[i - 3] == '\r') {
                return i + 1;
            }
        }
        return -1;
    }

    /**
     * Ends a download gracefully: asks the target to stop, reads what is still on its way up to the target's FIN,
     * closes. (Closing a busy stream abruptly instead resets it with data in flight: see AbortProbe.)
     */
    static void finish(SocketChannel ch) throws IOException {
        java.util.concurrent.ScheduledFuture<?> watchdog = WATCHDOG.schedule(() -> {
            try {
                ch.close();
            } catch (IOException e) {
                // closing anyway
            }
        }, 30, java.util.concurrent.TimeUnit.SECONDS);
        try {
            writeFully(ch, ByteBuffer.wrap(new byte[]{'X'}));
            ByteBuffer sink = ByteBuffer.allocateDirect(256 * 1024);
            while (true) {
                sink.clear();
                if (ch.read(sink) < 0) {
                    break;
                }
            }
        } finally {
            watchdog.cancel(false);
            ch.close();
        }
    }

    private static final java.util.concurrent.ScheduledExecutorService WATCHDOG =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "bench-finish-watchdog");
                t.setDaemon(true);
                return t;
            });

    static void command(SocketChannel ch, byte op, long arg) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(BenchTarget.COMMAND_BYTES);
        b.put(op).putLong(arg).flip();
        writeFully(ch, b);
    }

    static void writeFully(SocketChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    static void readFully(SocketChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (ch.read(b) < 0) {
                throw new EOFException("stream ended early");
            }
        }
    }
}
