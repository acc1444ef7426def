package dev.previewtunnel.gateway.security;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A one-connection loopback TCP relay that records what the server sends, so a test can see the bytes on the wire
 * even when the client application never reads them (e.g. its write fails with EPIPE after the server closed and it
 * drops the connection before reading what was already received). Blocking sockets, one thread per direction: the
 * recording direction reads until EOF or reset regardless of what happens to the other, and a blocking read returns
 * data already received before it reports a reset.
 */
final class TcpTap implements AutoCloseable {
    private final ServerSocket listener;
    private final InetSocketAddress upstream;
    private final ByteArrayOutputStream fromServer = new ByteArrayOutputStream();
    private final CompletableFuture<Void> serverDone = new CompletableFuture<>();
    private final List<Socket> sockets = new ArrayList<>();

    TcpTap(InetSocketAddress upstream) throws IOException {
        this.upstream = upstream;
        this.listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::acceptOne, "tcp-tap-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port() {
        return listener.getLocalPort();
    }

    private void acceptOne() {
        try {
            Socket client = listener.accept();
            Socket server = new Socket();
            server.connect(upstream, 5000);
            synchronized (sockets) {
                sockets.add(client);
                sockets.add(server);
            }
            pump(client.getInputStream(), server.getOutputStream(), null, null, "tcp-tap-up");
            pump(server.getInputStream(), client.getOutputStream(), fromServer, serverDone, "tcp-tap-down");
        } catch (IOException e) {
            serverDone.complete(null);
        }
    }

    private static void pump(InputStream in, OutputStream out, ByteArrayOutputStream record,
                             CompletableFuture<Void> done, String name) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[16 * 1024];
            boolean forwarding = true;
            try {
                for (int n; (n = in.read(buf)) >= 0; ) {
                    if (record != null) {
                        synchronized (record) {
                            record.write(buf, 0, n);
                        }
                    }
                    if (forwarding) {
                        try {
                            out.write(buf, 0, n);
                        } catch (IOException peerGone) {
                            forwarding = false; // keep reading (and recording) what is still coming
                        }
                    }
                }
            } catch (IOException reset) {
                // connection reset: everything received before it has been read
            } finally {
                try {
                    out.close();
                } catch (IOException ignored) {
                    // closing the other side is best effort
                }
                if (done != null) {
                    done.complete(null);
                }
            }
        }, name);
        t.setDaemon(true);
        t.start();
    }

    /** Waits until the server side ended (EOF or reset) and returns everything it sent. */
    byte[] serverBytes(long timeout, TimeUnit unit) throws Exception {
        serverDone.get(timeout, unit);
        synchronized (fromServer) {
            return fromServer.toByteArray();
        }
    }

    /**
     * Decodes a server-to-client WebSocket byte stream (unmasked frames) into the HTTP/2 frames carried by its
     * binary messages and returns the error code of the first GOAWAY, or -1 if there is none.
     */
    static long goAwayErrorCode(byte[] wire) {
        ByteArrayOutputStream h2 = new ByteArrayOutputStream();
        int i = 0;
        // Skip the HTTP/1.1 101 response head.
        for (; i + 3 < wire.length; i++) {
            if (wire[i] == '\r' && wire[i + 1] == '\n' && wire[i + 2] == '\r' && wire[i + 3] == '\n') {
                i += 4;
                break;
            }
        }
        while (i + 2 <= wire.length) {
            int opcode = wire[i] & 0x0f;
            boolean masked = (wire[i + 1] & 0x80) != 0;
            long len = wire[i + 1] & 0x7f;
            int header = 2;
            if (len == 126) {
                if (i + 4 > wire.length) {
                    break;
                }
                len = ((wire[i + 2] & 0xff) << 8) | (wire[i + 3] & 0xff);
                header = 4;
            } else if (len == 127) {
                if (i + 10 > wire.length) {
                    break;
                }
                len = 0;
                for (int k = 0; k < 8; k++) {
                    len = (len << 8) | (wire[i + 2 + k] & 0xff);
                }
                header = 10;
            }
            if (masked) {
                header += 4; // a server never masks; tolerate it anyway
            }
            if (i + header + len > wire.length) {
                break; // truncated last frame
            }
            if (opcode == 0x2 || opcode == 0x0) {
                h2.write(wire, i + header, (int) len);
            }
            i += header + (int) len;
        }
        byte[] f = h2.toByteArray();
        int p = 0;
        while (p + 9 <= f.length) {
            int length = ((f[p] & 0xff) << 16) | ((f[p + 1] & 0xff) << 8) | (f[p + 2] & 0xff);
            int type = f[p + 3] & 0xff;
            if (type == 0x7 && p + 9 + 8 <= f.length) {
                int q = p + 9 + 4;
                return ((long) (f[q] & 0xff) << 24) | ((f[q + 1] & 0xff) << 16) | ((f[q + 2] & 0xff) << 8)
                        | (f[q + 3] & 0xff);
            }
            p += 9 + length;
        }
        return -1;
    }

    @Override
    public void close() throws IOException {
        listener.close();
        synchronized (sockets) {
            for (Socket s : sockets) {
                s.close();
            }
        }
    }
}
