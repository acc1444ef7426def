package dev.previewtunnel.mux.relay;

import dev.previewtunnel.mux.wire.MuxProtocol;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.RecvByteBufAllocator;

/**
 * Sizes of the buffers the tunnel reads and writes on its hot path: socket reads of at most {@link #MAX_READ}
 * bytes, and WebSocket messages of at most {@link MuxProtocol#MAX_SENT_MESSAGE}.
 *
 * <p>Why 16 KiB and not Netty's 64 KiB reads: with a maximum heap of 512 MiB or less (the launchers use 128 to
 * 256 MiB; buffers are direct memory), Netty 4.2's adaptive allocator runs in a low-memory mode in which no buffer
 * larger than its largest size class (16,896 bytes) is pooled: each one is a fresh direct allocation, zeroed. With
 * 64 KiB reads and messages that zeroing was 4-8% of each side's CPU while transferring; with 16 KiB the hot path
 * stays in the pool. Smaller reads also lower the gateway's memory under many streams (each stream may hold one
 * read beyond its write mark). Measured in two A/B pairs per path (docs/performance.md, finding 9): gateway RSS
 * with 1,000 streams 247-294 -> 187-258 MiB, upload +15-60%, download unchanged within noise.
 */
public final class ReadBuffers {
    /** The largest socket read; TLS records are at most 16 KiB too. */
    public static final int MAX_READ = 16 * 1024;

    private static final RecvByteBufAllocator ALLOCATOR = new AdaptiveRecvByteBufAllocator(64, 2048, MAX_READ);

    private ReadBuffers() {
    }

    /** For {@code ChannelOption.RCVBUF_ALLOCATOR} of the tunnel sockets (shareable). */
    public static RecvByteBufAllocator allocator() {
        return ALLOCATOR;
    }

    /**
     * For {@code ChannelOption.RCVBUF_ALLOCATOR} of a socket that a {@link RelayHandler} will relay (a target or a
     * direct-egress socket): the same sizes, and several reads per {@code read()} once linked ({@link RelayReads}).
     * A new instance per channel: never share it through a server's child option.
     */
    public static RecvByteBufAllocator relayAllocator() {
        return new RelayReads(ALLOCATOR);
    }

    /**
     * Installs {@link #relayAllocator()} on {@code channel} (an accepted browser socket, a tunnel stream): call it
     * from the channel's initializer, before its first read.
     */
    public static void relayReads(Channel channel) {
        channel.config().setRecvByteBufAllocator(relayAllocator());
    }
}
