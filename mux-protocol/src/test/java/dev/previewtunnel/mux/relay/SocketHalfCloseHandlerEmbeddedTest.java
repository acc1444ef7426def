package dev.previewtunnel.mux.relay;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.DuplexChannel;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link SocketHalfCloseHandler}'s own contract on an embedded duplex channel (Netty's path, as on NIO): the
 * half-close happens only after every byte written before {@link OutputShutdown} has gone out, and its promise
 * follows. The native fast path is tested on real sockets ({@link SocketHalfCloseHandlerTest}).
 */
class SocketHalfCloseHandlerEmbeddedTest {
    /** An embedded channel that is a duplex one: records when its output was shut down. */
    static final class Duplex extends EmbeddedChannel implements DuplexChannel {
        int sentWhenShutDown = -1;

        Duplex() {
            super(SocketHalfCloseHandler.INSTANCE);
        }

        @Override
        public boolean isInputShutdown() {
            return false;
        }

        @Override
        public ChannelFuture shutdownInput() {
            return shutdownInput(newPromise());
        }

        @Override
        public ChannelFuture shutdownInput(ChannelPromise promise) {
            return promise.setFailure(new UnsupportedOperationException());
        }

        @Override
        public boolean isOutputShutdown() {
            return sentWhenShutDown >= 0;
        }

        @Override
        public ChannelFuture shutdownOutput() {
            return shutdownOutput(newPromise());
        }

        @Override
        public ChannelFuture shutdownOutput(ChannelPromise promise) {
            sentWhenShutDown = outboundMessages().size();
            return promise.setSuccess();
        }

        @Override
        public boolean isShutdown() {
            return isOutputShutdown();
        }

        @Override
        public ChannelFuture shutdown() {
            return shutdownOutput();
        }

        @Override
        public ChannelFuture shutdown(ChannelPromise promise) {
            return shutdownOutput(promise);
        }
    }

    @Test
    void theHalfCloseFollowsEveryByteWrittenBeforeIt() {
        Duplex ch = new Duplex();
        ByteBuf bytes = Unpooled.copiedBuffer("last bytes", StandardCharsets.US_ASCII);
        ch.write(bytes); // queued, not yet flushed
        ChannelFuture fin = ch.writeAndFlush(OutputShutdown.INSTANCE); // runs the loop's tasks too
        ch.runPendingTasks();
        assertTrue(fin.isSuccess());
        assertEquals(2, ch.sentWhenShutDown, "the bytes and the empty marker write were out first");
        ByteBuf sent = ch.readOutbound();
        assertSame(bytes, sent);
        sent.release();
        ByteBuf marker = ch.readOutbound();
        assertEquals(0, marker.readableBytes());
        marker.release();
        assertNull(ch.readOutbound(), "OutputShutdown itself never reaches the socket");
        assertFalse(ch.finish());
    }

    @Test
    void aFlushThatFailsFailsTheHalfCloseWithoutShuttingDown() {
        Duplex ch = new Duplex();
        IOException reset = new IOException("connection reset");
        ch.pipeline().addFirst(new ChannelOutboundHandlerAdapter() {
            @Override
            public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                io.netty.util.ReferenceCountUtil.release(msg);
                promise.setFailure(reset);
            }
        });
        ChannelFuture fin = ch.writeAndFlush(OutputShutdown.INSTANCE);
        ch.runPendingTasks();
        assertSame(reset, fin.cause());
        assertFalse(ch.isOutputShutdown());
        assertFalse(ch.finish());
    }

    @Test
    void everythingElsePassesThrough() {
        Duplex ch = new Duplex();
        ByteBuf bytes = Unpooled.copiedBuffer("x", StandardCharsets.US_ASCII);
        assertTrue(ch.writeOutbound(bytes));
        ByteBuf sent = ch.readOutbound();
        assertSame(bytes, sent);
        sent.release();
        assertEquals(0, bytes.refCnt());
        assertInstanceOf(DuplexChannel.class, ch);
        assertFalse(ch.isOutputShutdown());
        assertFalse(ch.finish());
    }
}
