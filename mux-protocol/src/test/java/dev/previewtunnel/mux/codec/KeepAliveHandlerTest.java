package dev.previewtunnel.mux.codec;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http2.DefaultHttp2PingFrame;
import io.netty.handler.codec.http2.Http2PingFrame;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

/** {@link KeepAliveHandler}'s own contract: a PING when the watchdog asks, PING frames stop here. */
class KeepAliveHandlerTest {
    private final List<Object> events = new ArrayList<>();
    private final EmbeddedChannel ch = new EmbeddedChannel(new KeepAliveHandler(),
            new ChannelInboundHandlerAdapter() {
                @Override
                public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                    events.add(evt);
                }
            });

    @Test
    void theWatchdogsPingNeededSendsOnePingAndGoesNoFurther() {
        ch.pipeline().fireUserEventTriggered(PeerSilenceWatchdog.PING_NEEDED);
        Http2PingFrame ping = ch.readOutbound();
        assertFalse(ping.ack());
        assertNull(ch.readOutbound());
        assertEquals(List.of(), events);
        assertFalse(ch.finish());
    }

    @Test
    void otherEventsPassThrough() {
        Object other = new Object();
        ch.pipeline().fireUserEventTriggered(other);
        assertEquals(List.of(other), events);
        assertNull(ch.readOutbound());
        assertFalse(ch.finish());
    }

    @Test
    void pingFramesStopHereEverythingElseGoesUp() {
        ch.writeInbound(new DefaultHttp2PingFrame(42, true), new DefaultHttp2PingFrame(7, false));
        assertNull(ch.readInbound(), "acks and the peer's pings (answered by the codec) stop here");
        ByteBuf other = Unpooled.buffer(1).writeByte(1);
        ch.writeInbound(other);
        assertSame(other, ch.readInbound());
        other.release();
        assertFalse(ch.finish());
    }
}
