package dev.previewtunnel.mux.codec;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.IllegalReferenceCountException;
import io.netty.util.internal.PlatformDependent;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Encodes a binary WebSocket message (RFC 6455 section 5.2: FIN, opcode 2, the length, and on the client a masking
 * key and the payload XORed with it) into one contiguous buffer.
 *
 * <p>Why not Netty's {@code WebSocket08FrameEncoder}: it masks 8 bytes at a time through {@code getLong} on the
 * payload and {@code writeLong} on the output, and every one of those calls goes through bounds checks, an
 * {@code ensureWritable} and, for pooled buffers, the root-parent lookup of the adaptive allocator. While uploading
 * that was 27% of the ingress's event-loop CPU, plus 8% for making the coalesced payload contiguous first
 * (docs/performance.md, finding 10). Here the payload is copied once with a bulk copy and then masked in place,
 * a long at a time, at the output's memory address (finding 35).
 *
 * <p>Only data messages take this path; control frames (ping, pong, close) still go through Netty's encoder,
 * and the decoding side is Netty's decoder in every case (the tests decode these frames with it).
 *
 * <p>The server does not mask, and over plain TCP Netty's encoder is the better choice there: it sends the header
 * and the coalesced payload as one gathering write, without a copy. Under TLS it is not: {@code SslHandler} copies
 * small writes into its own buffer, and a copy from a composite payload into a pooled buffer goes through
 * {@code CompositeByteBuf.nioBuffer}, which first merges the components into a new heap buffer (Netty 4.2.18's
 * {@code AdaptiveByteBuf.setBytes}); that was 9% of the gateway's event-loop CPU downloading over {@code wss://}.
 * {@link #unmasked} makes the one copy instead, component by component, direct to direct.
 */
final class BinaryFrames {
    private static final int FIN_BINARY = 0x80 | 0x2;
    private static final int MASK_BIT = 0x80;

    private BinaryFrames() {
    }

    /**
     * One masked binary frame (the client's) holding {@code payload}'s readable bytes, with a fresh random masking
     * key. {@code payload} is released.
     */
    static ByteBuf masked(ByteBufAllocator alloc, ByteBuf payload) {
        return encode(alloc, payload, true, ThreadLocalRandom.current().nextInt());
    }

    /** One unmasked binary frame (the server's) of {@code payload}'s readable bytes; {@code payload} is released. */
    static ByteBuf unmasked(ByteBufAllocator alloc, ByteBuf payload) {
        return encode(alloc, payload, false, 0);
    }

    private static ByteBuf encode(ByteBufAllocator alloc, ByteBuf payload, boolean mask, int maskingKey) {
        try {
            int length = payload.readableBytes();
            int lengthBytes = length < 126 ? 0 : length <= 0xFFFF ? 2 : 8;
            int maskBit = mask ? MASK_BIT : 0;
            ByteBuf frame = alloc.directBuffer(2 + lengthBytes + (mask ? 4 : 0) + length);
            boolean done = false;
            try {
                frame.writeByte(FIN_BINARY);
                if (lengthBytes == 0) {
                    frame.writeByte(maskBit | length);
                } else if (lengthBytes == 2) {
                    frame.writeByte(maskBit | 126);
                    frame.writeShort(length);
                } else {
                    frame.writeByte(maskBit | 127);
                    frame.writeLong(length);
                }
                if (mask) {
                    frame.writeInt(maskingKey);
                }
                int start = frame.writerIndex();
                // A composite payload copies component by component (no merged temporary copy).
                payload.getBytes(payload.readerIndex(), frame, start, length);
                frame.writerIndex(start + length);
                if (mask) {
                    maskInPlace(frame, start, length, maskingKey);
                }
                done = true;
                return frame;
            } finally {
                if (!done) {
                    frame.release();
                }
            }
        } finally {
            payload.release();
        }
    }

    /**
     * XORs {@code length} bytes from {@code index} with the key, repeated; the key's first byte applies to the
     * first byte (big-endian, as it is sent). Steps of 8 bytes keep the key's phase, so only the tail of fewer than
     * 8 bytes needs the per-byte form.
     *
     * <p>Why through the buffer's memory address when it has one: the NIO view's {@code getLong}/{@code putLong}
     * cost ~1.9 s per GiB under C1 (its session and bounds checks are calls there), the address form ~0.1 s, and
     * under C2 it is twice as fast as the view too (docs/performance.md, finding 35).
     */
    static void maskInPlace(ByteBuf buf, int index, int length, int maskingKey) {
        // The address path has none of ByteBuf's own checks: one here, so that a wrong caller fails instead of
        // writing outside the buffer.
        if (index < 0 || length < 0 || index > buf.capacity() - length) {
            throw new IndexOutOfBoundsException("mask " + length + " bytes at " + index + " of " + buf.capacity());
        }
        if (buf.refCnt() == 0) {
            throw new IllegalReferenceCountException(0);
        }
        // A read-only wrapper still reports the address of the memory it guards (a read-only mapping, even).
        if (buf.isReadOnly()) {
            throw new ReadOnlyBufferException();
        }
        if (length == 0) {
            return;
        }
        if (PlatformDependent.hasUnsafe() && buf.hasMemoryAddress() && PlatformDependent.isUnaligned()) {
            maskAtAddress(buf.memoryAddress() + index, length, maskingKey);
        } else if (buf.nioBufferCount() == 1) {
            maskThroughView(buf, index, length, maskingKey);
        } else { // not one region of memory: the slow, always-correct form
            for (int i = 0; i < length; i++) {
                buf.setByte(index + i, buf.getByte(index + i) ^ (maskingKey >>> (24 - 8 * (i & 3))));
            }
        }
    }

    /** The caller owns {@code length} bytes from {@code address} (a live direct buffer's memory). */
    private static void maskAtAddress(long address, int length, int maskingKey) {
        // Unsafe reads and writes in the platform's byte order: the key's bytes laid out in that order.
        int key = PlatformDependent.BIG_ENDIAN_NATIVE_ORDER ? maskingKey : Integer.reverseBytes(maskingKey);
        long mask = (key & 0xFFFFFFFFL) | ((long) key << 32);
        int i = 0;
        for (int end = length - 7; i < end; i += 8) {
            PlatformDependent.putLong(address + i, PlatformDependent.getLong(address + i) ^ mask);
        }
        for (; i < length; i++) {
            int keyByte = maskingKey >>> (24 - 8 * (i & 3));
            PlatformDependent.putByte(address + i, (byte) (PlatformDependent.getByte(address + i) ^ keyByte));
        }
    }

    /** A single-region buffer's NIO view shares its memory, so writes through the view land in the frame. */
    private static void maskThroughView(ByteBuf buf, int index, int length, int maskingKey) {
        ByteBuffer view = buf.nioBuffer(index, length).order(ByteOrder.BIG_ENDIAN);
        int base = view.position();
        long mask = (maskingKey & 0xFFFFFFFFL) | ((long) maskingKey << 32);
        int i = 0;
        for (int end = length - 7; i < end; i += 8) {
            view.putLong(base + i, view.getLong(base + i) ^ mask);
        }
        for (; i < length; i++) {
            int keyByte = maskingKey >>> (24 - 8 * (i & 3));
            view.put(base + i, (byte) (view.get(base + i) ^ keyByte));
        }
    }
}
