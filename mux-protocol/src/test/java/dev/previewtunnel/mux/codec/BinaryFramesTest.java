package dev.previewtunnel.mux.codec;

import dev.previewtunnel.mux.wire.MuxProtocol;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocket08FrameDecoder;
import io.netty.handler.codec.http.websocketx.WebSocketDecoderConfig;
import io.netty.util.IllegalReferenceCountException;
import io.netty.util.internal.PlatformDependent;
import org.junit.jupiter.api.Test;

import java.nio.ReadOnlyBufferException;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Our own frame encoding, checked against Netty's decoder: masked frames in its server configuration (masked frames
 * required, no mask mismatch allowed), unmasked ones in its client configuration. Every payload, split into any
 * components and with any key, must come out of the decoder byte for byte, and the header must use the shortest
 * length form RFC 6455 allows.
 */
class BinaryFramesTest {
    private static final ByteBufAllocator ALLOC = ByteBufAllocator.DEFAULT;
    private static final int[] EDGE_LENGTHS = {0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 125, 126, 127, 128, 4095,
            MuxProtocol.MAX_SENT_MESSAGE - 1, MuxProtocol.MAX_SENT_MESSAGE, 65_535, 65_536, 70_001};

    @Test
    void edgeLengthsDecodeToTheSamePayload() {
        Random random = new Random(1);
        for (int length : EDGE_LENGTHS) {
            roundTrip(random, length, true);
            roundTrip(random, length, false);
        }
    }

    @Test
    void randomPayloadsSplitsAndKeysDecodeToTheSamePayload() {
        Random random = new Random(20261130);
        for (int i = 0; i < 400; i++) {
            int length = random.nextInt(4) == 0 ? random.nextInt(130) : random.nextInt(70_000);
            roundTrip(random, length, random.nextBoolean());
        }
    }

    @Test
    void headerUsesTheShortestLengthForm() {
        assertHeader(125, 2, 125);
        assertHeader(126, 4, 126);
        assertHeader(65_535, 4, 126);
        assertHeader(65_536, 10, 127);
    }

    @Test
    void unmaskedFrameIsHeaderAndPayloadAsSent() {
        byte[] payload = {1, 2, 3, (byte) 0xFF};
        ByteBuf frame = BinaryFrames.unmasked(ALLOC, Unpooled.wrappedBuffer(payload));
        try {
            assertArrayEquals(new byte[]{(byte) 0x82, 4, 1, 2, 3, (byte) 0xFF}, bytesOf(frame));
        } finally {
            frame.release();
        }
    }

    @Test
    void everyPathMasksTheSameWayAndNothingOutside() {
        // Direct: at its memory address; heap: through its NIO view; a composite of two parts: byte by byte.
        Random random = new Random(7);
        byte[] guard = {0x5A, 0x5A, 0x5A, 0x5A, 0x5A, 0x5A, 0x5A, 0x5A, 0x5A};
        for (int length : EDGE_LENGTHS) {
            for (int offset : new int[]{0, 1, 7}) {
                byte[] bytes = new byte[length];
                random.nextBytes(bytes);
                int key = random.nextInt();
                ByteBuf direct = Unpooled.directBuffer(offset + length + guard.length)
                        .writeBytes(guard, 0, offset).writeBytes(bytes).writeBytes(guard);
                ByteBuf heap = Unpooled.buffer(offset + length + guard.length)
                        .writeBytes(guard, 0, offset).writeBytes(bytes).writeBytes(guard);
                CompositeByteBuf split = ALLOC.compositeDirectBuffer()
                        .addComponent(true, Unpooled.directBuffer()
                                .writeBytes(guard, 0, offset).writeBytes(bytes, 0, length / 2))
                        .addComponent(true, Unpooled.directBuffer()
                                .writeBytes(bytes, length / 2, length - length / 2).writeBytes(guard));
                try {
                    // The address path needs Unsafe and unaligned access (x86 and arm64 here); without them this
                    // test would quietly run the view path twice.
                    assertTrue(PlatformDependent.hasUnsafe() && PlatformDependent.isUnaligned()
                            && direct.hasMemoryAddress() && !heap.hasMemoryAddress() && heap.nioBufferCount() == 1
                            && split.nioBufferCount() == 2 && !split.hasMemoryAddress(), "each takes its own path");
                    BinaryFrames.maskInPlace(direct, offset, length, key);
                    BinaryFrames.maskInPlace(heap, offset, length, key);
                    BinaryFrames.maskInPlace(split, offset, length, key);
                    byte[] expected = reference(bytes, key);
                    for (ByteBuf b : List.of(direct, heap, split)) {
                        String what = (b == direct ? "direct" : b == heap ? "heap" : "composite") + ", length "
                                + length + ", offset " + offset;
                        assertArrayEquals(Arrays.copyOf(guard, offset), bytesOf(b.slice(0, offset)), what);
                        assertArrayEquals(expected, bytesOf(b.slice(offset, length)), what);
                        assertArrayEquals(guard, bytesOf(b.slice(offset + length, guard.length)), what);
                    }
                } finally {
                    direct.release();
                    heap.release();
                    split.release();
                }
            }
        }
    }

    @Test
    void aRangeOutsideTheBufferIsRefusedBeforeAnyWrite() {
        ByteBuf buf = Unpooled.directBuffer(16).writeZero(16);
        try {
            assertThrows(IndexOutOfBoundsException.class, () -> BinaryFrames.maskInPlace(buf, 9, 8, 1));
            assertThrows(IndexOutOfBoundsException.class, () -> BinaryFrames.maskInPlace(buf, -1, 4, 1));
            assertArrayEquals(new byte[16], bytesOf(buf));
        } finally {
            buf.release();
        }
    }

    @Test
    void aReleasedOrReadOnlyBufferIsRefusedBeforeAnyWrite() {
        ByteBuf released = Unpooled.directBuffer(16).writeZero(16);
        released.release();
        assertThrows(IllegalReferenceCountException.class, () -> BinaryFrames.maskInPlace(released, 0, 16, 1));
        // A read-only view still reports the address of the memory under it: the address path must not write there.
        ByteBuf buf = Unpooled.directBuffer(16).writeZero(16);
        try {
            ByteBuf readOnly = buf.asReadOnly();
            assertTrue(readOnly.hasMemoryAddress(), "the case this guards: an address behind a read-only view");
            assertThrows(ReadOnlyBufferException.class, () -> BinaryFrames.maskInPlace(readOnly, 0, 16, 1));
            assertArrayEquals(new byte[16], bytesOf(buf));
        } finally {
            buf.release();
        }
    }

    private static void roundTrip(Random random, int length, boolean masked) {
        byte[] bytes = new byte[length];
        random.nextBytes(bytes);
        CompositeByteBuf payload = composite(random, bytes);
        ByteBuf frame = masked ? BinaryFrames.masked(ALLOC, payload)
                : BinaryFrames.unmasked(ALLOC, payload);
        assertEquals(0, payload.refCnt(), "the payload is released once it is copied into the frame");
        // The receiving end: the server expects masked frames, the client unmasked ones; neither allows the other.
        EmbeddedChannel server = new EmbeddedChannel(new WebSocket08FrameDecoder(WebSocketDecoderConfig.newBuilder()
                .expectMaskedFrames(masked).allowMaskMismatch(false).maxFramePayloadLength(1 << 20).build()));
        try {
            // Arrive in random pieces, as from a socket.
            while (frame.isReadable()) {
                server.writeInbound(frame.readRetainedSlice(1 + random.nextInt(frame.readableBytes())));
            }
            BinaryWebSocketFrame decoded = assertInstanceOf(BinaryWebSocketFrame.class, server.readInbound(),
                    "length " + length + (masked ? " masked" : " unmasked"));
            try {
                assertEquals(true, decoded.isFinalFragment());
                assertArrayEquals(bytes, bytesOf(decoded.content()),
                        "length " + length + (masked ? " masked" : " unmasked"));
            } finally {
                decoded.release();
            }
            assertNull(server.readInbound());
        } finally {
            frame.release();
            server.finishAndReleaseAll();
        }
    }

    private static void assertHeader(int length, int headerBeforeKey, int lengthCode) {
        ByteBuf frame = BinaryFrames.masked(ALLOC, Unpooled.wrappedBuffer(new byte[length]));
        try {
            assertEquals(headerBeforeKey + 4 + length, frame.readableBytes());
            assertEquals(0x82, frame.getUnsignedByte(0), "FIN and binary opcode");
            assertEquals(0x80 | lengthCode, frame.getUnsignedByte(1), "mask bit and length code");
            // The key is random: the 4 bytes after the length are the key the zero payload was masked with.
            int key = frame.getInt(headerBeforeKey);
            byte[] masked = new byte[length];
            frame.getBytes(headerBeforeKey + 4, masked);
            assertArrayEquals(reference(new byte[length], key), masked, "masking key, then the payload masked with it");
        } finally {
            frame.release();
        }
    }

    /** The bytes in 1 to 4 components of random sizes, as the bridge's coalescing queue hands them over. */
    private static CompositeByteBuf composite(Random random, byte[] bytes) {
        CompositeByteBuf composite = ALLOC.compositeDirectBuffer();
        int offset = 0;
        int parts = 1 + random.nextInt(4);
        for (int p = 0; p < parts; p++) {
            int size = p == parts - 1 ? bytes.length - offset : random.nextInt(bytes.length - offset + 1);
            composite.addComponent(true, ALLOC.directBuffer(size).writeBytes(bytes, offset, size));
            offset += size;
        }
        return composite;
    }

    private static byte[] reference(byte[] bytes, int key) {
        byte[] out = new byte[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            out[i] = (byte) (bytes[i] ^ (key >>> (24 - 8 * (i % 4))));
        }
        return out;
    }

    private static byte[] bytesOf(ByteBuf buf) {
        byte[] out = new byte[buf.readableBytes()];
        buf.getBytes(buf.readerIndex(), out);
        return out;
    }
}
