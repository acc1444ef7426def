package dev.previewtunnel.spikes.chain;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A plain loopback TCP byte relay whose upstream can be switched: connections accepted after
 * {@link #switchTo} go to the new upstream, connections already relayed stay on the old one. It stands in for
 * the load balancer or DNS name in front of a gateway during a rolling restart. Bytes are copied unchanged, with
 * half-close passed on; {@link #close()} ends every connection, so nothing it started outlives the test.
 */
final class SwitchableTcpRelay implements AutoCloseable {
    private final ServerSocket server;
    private final AtomicReference<InetSocketAddress> upstream;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final Thread acceptor;
    private volatile boolean closed;

    private SwitchableTcpRelay(InetSocketAddress first) throws IOException {
        this.upstream = new AtomicReference<>(first);
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.acceptor = new Thread(this::acceptLoop, "relay-accept-" + server.getLocalPort());
        acceptor.setDaemon(true);
    }

    static SwitchableTcpRelay start(InetSocketAddress upstream) throws IOException {
        SwitchableTcpRelay relay = new SwitchableTcpRelay(upstream);
        relay.acceptor.start();
        return relay;
    }

    int port() {
        return server.getLocalPort();
    }

    /** New connections from now on go to {@code next}. */
    void switchTo(InetSocketAddress next) {
        upstream.set(next);
    }

    private void acceptLoop() {
        while (!closed) {
            Socket down;
            try {
                down = server.accept();
            } catch (IOException e) {
                return; // closed
            }
            Socket up = new Socket();
            try {
                up.connect(upstream.get(), 5_000);
            } catch (IOException e) {
                closeQuietly(down);
                closeQuietly(up);
                continue;
            }
            sockets.add(down);
            sockets.add(up);
            AtomicInteger directionsDone = new AtomicInteger();
            pump(down, up, directionsDone);
            pump(up, down, directionsDone);
        }
    }

    /**
     * Copies {@code from}'s input to {@code to}'s output until EOF, then half-closes {@code to}; the pair is
     * closed once both directions have ended, or at once when either side fails.
     */
    private void pump(Socket from, Socket to, AtomicInteger directionsDone) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[64 * 1024];
            try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                int n;
                while ((n = in.read(buf)) >= 0) {
                    out.write(buf, 0, n);
                }
                to.shutdownOutput();
                if (directionsDone.incrementAndGet() == 2) {
                    closeQuietly(from);
                    closeQuietly(to);
                }
            } catch (IOException e) {
                // One side reset or was closed: end both, as a relay does.
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "relay-pump");
        t.setDaemon(true);
        t.start();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing is all that is left to do
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        server.close();
        sockets.forEach(SwitchableTcpRelay::closeQuietly);
    }
}
