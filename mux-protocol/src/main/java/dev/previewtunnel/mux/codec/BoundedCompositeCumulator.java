package dev.previewtunnel.mux.codec;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.handler.codec.ByteToMessageDecoder;

/**
 * Cumulation for the tunnel's decoders that avoids copying large pieces without letting a peer choose how many
 * parts it holds.
 *
 * <p>Large pieces (at least {@link #MIN_PIECE} bytes) become parts of a composite buffer, up to {@link #MAX_PARTS}
 * parts: no copy, which is what matters for bulk transfers, where nearly every frame arrives in two pieces
 * (docs/performance.md, finding 13). Smaller pieces are copied, as Netty's default cumulator does. Why not Netty's
 * {@code COMPOSITE_CUMULATOR} as it is: it never merges, so a peer sending one frame as thousands of 1-byte
 * WebSocket messages would make the decoder hold thousands of parts, each costing a buffer object and at least a
 * pooled size class: about 150 times the bytes it sent.
 *
 * <p>What a peer can still do: a small piece after a large one copies what is held, at most one incomplete frame
 * (the decoders consume every complete one). Alternating 4 KiB and 1-byte messages costs the receiver one copy of
 * up to the maximum frame size per 4 KiB sent: 16 times at the default 64 KiB (docs/security.md).
 */
final class BoundedCompositeCumulator implements ByteToMessageDecoder.Cumulator {
    static final BoundedCompositeCumulator INSTANCE = new BoundedCompositeCumulator();
    /** Below this a piece is copied: cheap, and a peer cannot make a part of a few bytes. */
    static final int MIN_PIECE = 4 * 1024;
    /** At most this many parts; past it, the pieces are merged into one buffer. */
    static final int MAX_PARTS = 16;

    private BoundedCompositeCumulator() {
    }

    @Override
    public ByteBuf cumulate(ByteBufAllocator alloc, ByteBuf cumulation, ByteBuf in) {
        if (!cumulation.isReadable()) {
            cumulation.release();
            return in;
        }
        boolean composite = cumulation instanceof CompositeByteBuf;
        if (in.readableBytes() >= MIN_PIECE
                && (!composite || ((CompositeByteBuf) cumulation).numComponents() < MAX_PARTS)) {
            return ByteToMessageDecoder.COMPOSITE_CUMULATOR.cumulate(alloc, cumulation, in);
        }
        if (!composite) {
            return ByteToMessageDecoder.MERGE_CUMULATOR.cumulate(alloc, cumulation, in);
        }
        // A composite must not grow by writes either (each would add a part): one flat copy of both instead.
        try {
            int held = cumulation.readableBytes();
            int added = in.readableBytes();
            ByteBuf flat = alloc.buffer(held + added);
            // getBytes copies part by part into the flat buffer (no merged temporary of the composite).
            cumulation.getBytes(cumulation.readerIndex(), flat, 0, held);
            in.getBytes(in.readerIndex(), flat, held, added);
            flat.writerIndex(held + added);
            return flat;
        } finally {
            cumulation.release();
            in.release();
        }
    }
}
