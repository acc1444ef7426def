package dev.previewtunnel.gateway.cli;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * What {@code ssh -L 127.0.0.1:PORT:/path/to.sock} does, in-process: each TCP connection to a loopback port is
 * relayed to a new connection to a Unix socket, both ways, half-close passed on. Blocking threads (test code).
 */
final class UnixSocketForwarder implements AutoCloseable {
    private final ServerSocketChannel listener;
    private final Path socket;
    private final List<SocketChannel> open = new CopyOnWriteArrayList<>();
    private final Thread acceptor;

    UnixSocketForwarder(Path socket) throws IOException {
        this.socket = socket;
        this.listener = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        this.acceptor = new Thread(this::acceptLoop, "test-unix-forwarder");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port() throws IOException {
        return ((InetSocketAddress) listener.getLocalAddress()).getPort();
    }

    private void acceptLoop() {
        while (listener.isOpen()) {
            try {
                SocketChannel tcp = listener.accept();
                SocketChannel unix = SocketChannel.open(StandardProtocolFamily.UNIX);
                open.add(tcp);
                open.add(unix);
                unix.connect(UnixDomainSocketAddress.of(socket));
                pump(tcp, unix);
                pump(unix, tcp);
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    private static void pump(SocketChannel from, SocketChannel to) {
        Thread t = new Thread(() -> {
            ByteBuffer buffer = ByteBuffer.allocate(16384);
            try {
                while (from.read(buffer) >= 0) {
                    buffer.flip();
                    while (buffer.hasRemaining()) {
                        to.write(buffer);
                    }
                    buffer.clear();
                }
                to.shutdownOutput();
            } catch (IOException e) {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "test-unix-forwarder-pump");
        t.setDaemon(true);
        t.start();
    }

    private static void closeQuietly(SocketChannel channel) {
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    @Override
    public void close() throws IOException {
        listener.close();
        open.forEach(UnixSocketForwarder::closeQuietly);
    }
}
