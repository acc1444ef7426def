package dev.previewtunnel.mux;

import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.local.LocalChannel;
import io.netty.channel.local.LocalIoHandler;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A relay's two channels share one event loop: {@link RelayHandler#link} refuses two (each EmbeddedChannel has a
 * loop of its own) and adds no handler; on one loop, both ends get their relay. docs/performance.md finding 15 is
 * what a relay across two loops cost.
 */
class RelayHandlerLinkTest {
    private final EmbeddedChannel a = new EmbeddedChannel();
    private final EmbeddedChannel b = new EmbeddedChannel();

    @AfterEach
    void close() {
        a.finishAndReleaseAll();
        b.finishAndReleaseAll();
    }

    @Test
    void refusesChannelsOfTwoEventLoops() {
        assertNotSame(a.eventLoop(), b.eventLoop());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RelayHandler.link(a, b, null));
        assertEquals("a relay's two channels must share one event loop", e.getMessage());
        assertNull(a.pipeline().get(RelayHandler.class), "nothing linked");
        assertNull(b.pipeline().get(RelayHandler.class), "nothing linked");
    }

    @Test
    void linksChannelsOfOneEventLoop() throws Exception {
        MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, LocalIoHandler.newFactory());
        LocalChannel x = new LocalChannel();
        LocalChannel y = new LocalChannel();
        try {
            group.register(x).sync();
            group.register(y).sync();
            RelayHandler.link(x, y, null);
            x.eventLoop().submit(() -> { }).sync(); // handlerAdded ran on the shared loop
            assertNotNull(x.pipeline().get(RelayHandler.class));
            assertNotNull(y.pipeline().get(RelayHandler.class));
        } finally {
            x.close().sync();
            y.close().sync();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }
}
