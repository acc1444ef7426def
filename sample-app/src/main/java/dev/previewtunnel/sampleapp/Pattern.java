package dev.previewtunnel.sampleapp;

import io.netty.buffer.ByteBuf;

import java.util.zip.CRC32;

/**
 * The deterministic, position-dependent byte pattern served by {@code /stream} and {@code /bytes}.
 * Byte at absolute offset {@code i} is the top 8 bits of {@code i * 0x9E3779B97F4A7C15} (Fibonacci hashing),
 * so every byte depends on every bit of its offset: dropped, duplicated or reordered blocks change the CRC.
 */
final class Pattern {
    static final long MULTIPLIER = 0x9E3779B97F4A7C15L;
    private static final int SCRATCH = 16 * 1024;

    private Pattern() {
    }

    static byte byteAt(long offset) {
        return (byte) ((offset * MULTIPLIER) >>> 56);
    }

    static void fill(long offset, byte[] dst, int dstIndex, int len) {
        long x = offset * MULTIPLIER;
        for (int i = 0; i < len; i++) {
            dst[dstIndex + i] = (byte) (x >>> 56);
            x += MULTIPLIER;
        }
    }

    /** Appends {@code len} pattern bytes starting at absolute {@code offset} to {@code dst}. */
    static void write(long offset, ByteBuf dst, int len, byte[] scratch) {
        int done = 0;
        while (done < len) {
            int n = Math.min(scratch.length, len - done);
            fill(offset + done, scratch, 0, n);
            dst.writeBytes(scratch, 0, n);
            done += n;
        }
    }

    static byte[] newScratch() {
        return new byte[SCRATCH];
    }

    static CRC32 crc(long n) {
        if (n < 0) {
            throw new IllegalArgumentException("n must be >= 0: " + n);
        }
        CRC32 crc = new CRC32();
        byte[] buf = new byte[64 * 1024];
        long off = 0;
        while (off < n) {
            int len = (int) Math.min(buf.length, n - off);
            fill(off, buf, 0, len);
            crc.update(buf, 0, len);
            off += len;
        }
        return crc;
    }
}
