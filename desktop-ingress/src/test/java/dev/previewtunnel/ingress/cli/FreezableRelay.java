package dev.previewtunnel.ingress.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A loopback TCP relay between the ingress and the gateway that can freeze: {@link #freeze()} makes every
 * connection it carries stop forwarding and stop reading, both ways, without closing anything. Each side then sees
 * what a stalled {@code ssh -L}, a SIGSTOPped gateway or a laptop that woke up on another network shows: a socket
 * that stays open, accepts writes until the kernel buffers fill, and never delivers a byte. Connections accepted
 * after the freeze are relayed normally (the way out: a new connection), unless {@link #refuseNew} says otherwise.
 */
final class FreezableRelay implements AutoCloseable {
    private final ServerSocket server;
    private final InetSocketAddress target;
    private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "freezable-relay");
        t.setDaemon(true);
        return t;
    });
    private final List<Pair> pairs = new ArrayList<>();
    private final CountDownLatch closed = new CountDownLatch(1);
    private volatile boolean refuseNew;

    FreezableRelay(InetSocketAddress target) throws IOException {
        this.target = target;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        threads.execute(this::acceptLoop);
    }

    int port() {
        return server.getLocalPort();
    }

    /** Freezes every connection relayed so far (not those accepted later). Returns how many it froze. */
    int freeze() {
        synchronized (pairs) {
            pairs.forEach(p -> p.frozen = true);
            return pairs.size();
        }
    }

    /** While set, new connections are closed as soon as they are accepted (the gateway still unreachable). */
    void refuseNew(boolean refuse) {
        refuseNew = refuse;
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                Socket in = server.accept();
                if (refuseNew) {
                    in.close();
                    continue;
                }
                Socket out = new Socket(target.getAddress(), target.getPort());
                Pair pair = new Pair(in, out);
                synchronized (pairs) {
                    pairs.add(pair);
                }
                threads.execute(() -> pump(pair, in, out));
                threads.execute(() -> pump(pair, out, in));
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    /** Copies {@code from} to {@code to} until the end of input, or until frozen: then holds without reading. */
    private void pump(Pair pair, Socket from, Socket to) {
        byte[] buffer = new byte[16 * 1024];
        try {
            InputStream in = from.getInputStream();
            OutputStream out = to.getOutputStream();
            while (true) {
                if (pair.frozen) {
                    closed.await();
                    return;
                }
                int n = in.read(buffer);
                if (n < 0) {
                    to.shutdownOutput();
                    return;
                }
                if (pair.frozen) {
                    closed.await(); // read before the freeze took effect: never delivered
                    return;
                }
                out.write(buffer, 0, n);
            }
        } catch (IOException | InterruptedException e) {
            pair.close();
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
        closed.countDown();
        synchronized (pairs) {
            pairs.forEach(Pair::close);
        }
        threads.shutdownNow();
    }

    private static final class Pair {
        final Socket a;
        final Socket b;
        volatile boolean frozen;

        Pair(Socket a, Socket b) {
            this.a = a;
            this.b = b;
        }

        void close() {
            try {
                a.close();
            } catch (IOException ignored) {
                // closing
            }
            try {
                b.close();
            } catch (IOException ignored) {
                // closing
            }
        }
    }
}
