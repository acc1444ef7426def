package dev.previewtunnel.mux.relay;

import io.netty.channel.epoll.Epoll;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The transports the relay tests run on, by name. */
final class TestTransports {
    private TestTransports() {
    }

    /** {@code epoll} (which must load: the CI machines are Linux, NativeLibrariesTest) or {@code nio}. */
    static Transports named(String name) {
        if ("epoll".equals(name)) {
            assertTrue(Epoll.isAvailable(), "native epoll transport unavailable: " + Epoll.unavailabilityCause());
        }
        Transports t = "epoll".equals(name) ? Transports.best()
                : new Transports("nio", NioIoHandler.newFactory(), NioSocketChannel.class,
                        NioServerSocketChannel.class);
        assertEquals(name, t.name());
        return t;
    }
}
