package dev.previewtunnel.sampleapp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.stream.ChunkedInput;

/**
 * Produces {@code total} bytes of {@link Pattern} in chunks of {@code chunkSize}, one chunk per
 * {@link #readChunk(ByteBufAllocator)} call. Driven by {@link io.netty.handler.stream.ChunkedWriteHandler},
 * which only asks for the next chunk while the channel is writable, so at most one chunk plus the
 * channel's high water mark is ever held in memory.
 */
final class PatternChunkedInput implements ChunkedInput<ByteBuf> {
    private final long total;
    private final int chunkSize;
    private final byte[] scratch = Pattern.newScratch();
    private long offset;
    private boolean closed;

    PatternChunkedInput(long total, int chunkSize) {
        if (total < 0 || chunkSize <= 0) {
            throw new IllegalArgumentException("total=" + total + " chunkSize=" + chunkSize);
        }
        this.total = total;
        this.chunkSize = chunkSize;
    }

    @Override
    public boolean isEndOfInput() {
        return closed || offset >= total;
    }

    @Override
    public void close() {
        closed = true;
    }

    @Deprecated
    @Override
    public ByteBuf readChunk(ChannelHandlerContext ctx) {
        return readChunk(ctx.alloc());
    }

    @Override
    public ByteBuf readChunk(ByteBufAllocator allocator) {
        if (isEndOfInput()) {
            return null;
        }
        int len = (int) Math.min(chunkSize, total - offset);
        ByteBuf buf = allocator.buffer(len);
        boolean ok = false;
        try {
            Pattern.write(offset, buf, len, scratch);
            offset += len;
            ok = true;
            return buf;
        } finally {
            if (!ok) {
                buf.release();
            }
        }
    }

    @Override
    public long length() {
        return total;
    }

    @Override
    public long progress() {
        return offset;
    }
}
