package dev.previewtunnel.sampleapp;

import io.netty.buffer.ByteBuf;

import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32;

/**
 * {@code POST /upload}: the body's length and CRC32, consumed chunk by chunk and never buffered; answered as JSON
 * when the last chunk arrives. One per upload request.
 */
final class UploadDigest {
    private final Reply reply;
    private final CRC32 crc = new CRC32();
    private long bytes;

    UploadDigest(Reply reply) {
        this.reply = reply;
    }

    void update(ByteBuf buf) {
        bytes += buf.readableBytes();
        if (buf.isReadable()) {
            for (ByteBuffer bb : buf.nioBuffers()) {
                crc.update(bb);
            }
        }
    }

    void finish() {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("bytes", bytes);
        body.put("crc32", String.format("%08x", crc.getValue()));
        reply.json(body);
    }
}
