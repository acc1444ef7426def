package dev.previewtunnel.mux.codec;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The decoders' cumulation: large pieces are held as parts (no copy), tiny pieces are copied, the number of parts
 * never passes {@link BoundedCompositeCumulator#MAX_PARTS} whatever the peer sends, and the bytes always come out
 * in order and whole.
 */
class BoundedCompositeCumulatorTest {
    private static final ByteBufAllocator ALLOC = ByteBufAllocator.DEFAULT;
    private static final BoundedCompositeCumulator CUMULATOR = BoundedCompositeCumulator.INSTANCE;

    @Test
    void largePiecesBecomePartsWithoutACopy() {
        ByteBuf cumulation = piece(new byte[100]);
        cumulation = CUMULATOR.cumulate(ALLOC, cumulation, piece(new byte[BoundedCompositeCumulator.MIN_PIECE]));
        try {
            CompositeByteBuf composite = assertInstanceOf(CompositeByteBuf.class, cumulation);
            assertEquals(2, composite.numComponents());
        } finally {
            cumulation.release();
        }
    }

    @Test
    void aPeerSendingTinyPiecesCannotMakeManyParts() {
        Random random = new Random(3);
        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        ByteBuf cumulation = piece(bytes(random, BoundedCompositeCumulator.MIN_PIECE, expected));
        try {
            for (int i = 0; i < 20_000; i++) {
                // Mostly 1-byte pieces, now and then a large one: the worst mix for part counting.
                int size = i % 500 == 0 ? BoundedCompositeCumulator.MIN_PIECE + random.nextInt(9000) : 1;
                cumulation = CUMULATOR.cumulate(ALLOC, cumulation, piece(bytes(random, size, expected)));
                if (cumulation instanceof CompositeByteBuf composite) {
                    assertTrue(composite.numComponents() <= BoundedCompositeCumulator.MAX_PARTS + 1,
                            () -> "parts: " + composite.numComponents());
                }
            }
            assertArrayEquals(expected.toByteArray(), contents(cumulation));
        } finally {
            cumulation.release();
        }
    }

    @Test
    void everyPieceIsReleasedExactlyOnceWhateverPathItTakes() {
        Random random = new Random(5);
        ByteBuf cumulation = piece(new byte[10]);
        for (int i = 0; i < 200; i++) {
            ByteBuf in = piece(new byte[random.nextBoolean() ? 3 : BoundedCompositeCumulator.MIN_PIECE]);
            ByteBuf before = cumulation;
            cumulation = CUMULATOR.cumulate(ALLOC, cumulation, in);
            if (cumulation != before && !(cumulation instanceof CompositeByteBuf)) {
                assertEquals(0, before.refCnt(), "a merged cumulation is released");
                assertEquals(0, in.refCnt(), "a copied piece is released");
            }
        }
        cumulation.release();
        assertFalse(cumulation.refCnt() > 0);
    }

    private static ByteBuf piece(byte[] bytes) {
        return ALLOC.directBuffer(bytes.length).writeBytes(bytes);
    }

    private static byte[] bytes(Random random, int size, ByteArrayOutputStream record) {
        byte[] b = new byte[size];
        random.nextBytes(b);
        record.writeBytes(b);
        return b;
    }

    private static byte[] contents(ByteBuf buf) {
        byte[] out = new byte[buf.readableBytes()];
        buf.getBytes(buf.readerIndex(), out);
        return out;
    }
}
