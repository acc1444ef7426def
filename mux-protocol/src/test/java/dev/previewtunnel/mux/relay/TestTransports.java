package dev.previewtunnel.mux.relay;

import io.netty.channel.epoll.Epoll;

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
        Transports t = "epoll".equals(name) ? Transports.best() : Transports.nio();
        assertEquals(name, t.name());
        return t;
    }
}
