package dev.previewtunnel.mux;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Encodes the client's binary WebSocket messages (RFC 6455 section 5.2: FIN, opcode 2, a masking key, the payload
 * XORed with it) into one buffer, masking while it copies.
 *
 * <p>Why not Netty's {@code WebSocket08FrameEncoder}: it masks 8 bytes at a time through {@code getLong} on the
 * payload and {@code writeLong} on the output, and every one of those calls goes through bounds checks, an
 * {@code ensureWritable} and, for pooled buffers, the root-parent lookup of the adaptive allocator. While uploading
 * that was 27% of the ingress's event-loop CPU, plus 8% for making the coalesced payload contiguous first
 * (docs/performance.md, finding 10). Here the payload is copied once with a bulk copy and then masked in place,
 * a long at a time, on the output's NIO view.
 *
 * <p>Only data messages take this path; control frames (ping, pong, close) still go through Netty's encoder,
 * and the decoding side is Netty's decoder in every case (the tests decode these frames with it).
 */
final class MaskedBinaryFrames {
    private static final int FIN_BINARY = 0x80 | 0x2;
    private static final int MASK_BIT = 0x80;

    private MaskedBinaryFrames() {
    }

    /**
     * One masked binary frame holding {@code payload}'s readable bytes, with a fresh random masking key.
     * {@code payload} is released.
     */
    static ByteBuf encode(ByteBufAllocator alloc, ByteBuf payload) {
        return encode(alloc, payload, ThreadLocalRandom.current().nextInt());
    }

    /** As {@link #encode(ByteBufAllocator, ByteBuf)} with the given masking key (for tests). */
    static ByteBuf encode(ByteBufAllocator alloc, ByteBuf payload, int maskingKey) {
        try {
            int length = payload.readableBytes();
            int lengthBytes = length < 126 ? 0 : length <= 0xFFFF ? 2 : 8;
            ByteBuf frame = alloc.directBuffer(2 + lengthBytes + 4 + length);
            boolean done = false;
            try {
                frame.writeByte(FIN_BINARY);
                if (lengthBytes == 0) {
                    frame.writeByte(MASK_BIT | length);
                } else if (lengthBytes == 2) {
                    frame.writeByte(MASK_BIT | 126);
                    frame.writeShort(length);
                } else {
                    frame.writeByte(MASK_BIT | 127);
                    frame.writeLong(length);
                }
                frame.writeInt(maskingKey);
                int start = frame.writerIndex();
                // A composite payload copies component by component (no merged temporary copy).
                payload.getBytes(payload.readerIndex(), frame, start, length);
                frame.writerIndex(start + length);
                maskInPlace(frame, start, length, maskingKey);
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
     */
    static void maskInPlace(ByteBuf buf, int index, int length, int maskingKey) {
        if (length == 0) {
            return;
        }
        if (buf.nioBufferCount() != 1) { // not one region of memory: the slow, always-correct form
            for (int i = 0; i < length; i++) {
                buf.setByte(index + i, buf.getByte(index + i) ^ (maskingKey >>> (24 - 8 * (i & 3))));
            }
            return;
        }
        // A single-region buffer's NIO view shares its memory, so writes through the view land in the frame.
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
