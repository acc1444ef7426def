package dev.previewtunnel.gateway.fuzz;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.DefaultHttp2HeadersDecoder;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2Headers;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * Wire helpers of the gateway fuzz test (test code, package {@code dev.previewtunnel.gateway} so the test can build
 * the gateway's package-private stream handler): client-side WebSocket framing, a reference scanner of what the
 * gateway's WebSocket decoder will make of a byte stream, an HTTP/2 completeness check, and a parser of everything
 * the gateway wrote back.
 */
final class GatewayFuzzWire {
    static final int OP_CONT = 0;
    static final int OP_TEXT = 1;
    static final int OP_BINARY = 2;
    static final int OP_CLOSE = 8;
    static final int OP_PING = 9;
    static final int OP_PONG = 10;

    static final byte[] PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

    private GatewayFuzzWire() {
    }

    // ------------------------------------------------------------------ client framing

    /** A masked (client) frame with the minimal length encoding. */
    static void frame(ByteArrayOutputStream out, Random r, boolean fin, int opcode, byte[] payload) {
        rawFrame(out, r, fin, 0, opcode, true, payload, payload.length, -1);
    }

    /**
     * A frame with every field under control: {@code lengthForm} -1 minimal, 0 seven-bit, 1 16-bit, 2 64-bit;
     * {@code declared} is written as the length whatever the payload's real size.
     */
    static void rawFrame(ByteArrayOutputStream out, Random r, boolean fin, int rsv, int opcode, boolean masked,
                         byte[] payload, long declared, int lengthForm) {
        out.write((fin ? 0x80 : 0) | ((rsv & 7) << 4) | (opcode & 0x0f));
        int maskBit = masked ? 0x80 : 0;
        int form = lengthForm >= 0 ? lengthForm : declared < 126 ? 0 : declared < 65536 ? 1 : 2;
        if (form == 0) {
            out.write(maskBit | (int) (declared & 0x7f));
        } else if (form == 1) {
            out.write(maskBit | 126);
            out.write((int) (declared >>> 8) & 0xff);
            out.write((int) declared & 0xff);
        } else {
            out.write(maskBit | 127);
            for (int i = 7; i >= 0; i--) {
                out.write((int) (declared >>> (8 * i)) & 0xff);
            }
        }
        if (masked) {
            byte[] mask = new byte[4];
            r.nextBytes(mask);
            out.write(mask, 0, 4);
            byte[] masked2 = payload.clone();
            for (int i = 0; i < masked2.length; i++) {
                masked2[i] ^= mask[i & 3];
            }
            out.write(masked2, 0, masked2.length);
        } else {
            out.write(payload, 0, payload.length);
        }
    }

    // ------------------------------------------------------------------ reference scan of client bytes

    enum WsEnd { COMPLETE, INCOMPLETE, VIOLATION, TEXT, CLOSE }

    /** What the gateway's WebSocket decoder and bridge will do with a client byte stream. */
    static final class WsScan {
        WsEnd end;
        boolean midFragment;
        final ByteArrayOutputStream h2 = new ByteArrayOutputStream();
        int frames;
    }

    /**
     * Mirrors {@code WebSocket08FrameDecoder} as configured by {@code MuxPipeline.decoderConfig(settings, true)}
     * (masked frames required, no extensions, {@code maxPayload}) and {@code WebSocketByteBridge} (binary and
     * continuation payloads go to HTTP/2, text closes, close closes).
     */
    static WsScan scanClient(byte[] in, int maxPayload) {
        WsScan s = new WsScan();
        int p = 0;
        int fragments = 0;
        int n = in.length;
        while (true) {
            if (p >= n) {
                s.end = WsEnd.COMPLETE;
                s.midFragment = fragments > 0;
                return s;
            }
            if (p + 1 >= n) {
                s.end = WsEnd.INCOMPLETE;
                return s;
            }
            int b0 = in[p] & 0xff;
            int b1 = in[p + 1] & 0xff;
            boolean fin = (b0 & 0x80) != 0;
            int rsv = (b0 & 0x70) >> 4;
            int op = b0 & 0x0f;
            boolean masked = (b1 & 0x80) != 0;
            int len1 = b1 & 0x7f;
            if (rsv != 0 || !masked) {
                s.end = WsEnd.VIOLATION;
                return s;
            }
            if (op > 7) {
                if (!fin || len1 > 125 || !(op == OP_CLOSE || op == OP_PING || op == OP_PONG)
                        || (op == OP_CLOSE && len1 == 1)) {
                    s.end = WsEnd.VIOLATION;
                    return s;
                }
            } else {
                if (!(op == OP_CONT || op == OP_TEXT || op == OP_BINARY)
                        || (fragments == 0 && op == OP_CONT) || (fragments != 0 && op != OP_CONT)) {
                    s.end = WsEnd.VIOLATION;
                    return s;
                }
            }
            int q = p + 2;
            long len;
            if (len1 == 126) {
                if (n - q < 2) {
                    s.end = WsEnd.INCOMPLETE;
                    return s;
                }
                len = ((in[q] & 0xff) << 8) | (in[q + 1] & 0xff);
                q += 2;
                if (len < 126) {
                    s.end = WsEnd.VIOLATION;
                    return s;
                }
            } else if (len1 == 127) {
                if (n - q < 8) {
                    s.end = WsEnd.INCOMPLETE;
                    return s;
                }
                len = ByteBuffer.wrap(in, q, 8).getLong();
                q += 8;
                if (len < 0 || len < 65536) {
                    s.end = WsEnd.VIOLATION;
                    return s;
                }
            } else {
                len = len1;
            }
            if (len > maxPayload) {
                s.end = WsEnd.VIOLATION;
                return s;
            }
            if (n - q < 4) {
                s.end = WsEnd.INCOMPLETE;
                return s;
            }
            byte[] mask = Arrays.copyOfRange(in, q, q + 4);
            q += 4;
            if (n - q < len) {
                s.end = WsEnd.INCOMPLETE;
                return s;
            }
            byte[] payload = Arrays.copyOfRange(in, q, q + (int) len);
            for (int i = 0; i < payload.length; i++) {
                payload[i] ^= mask[i & 3];
            }
            p = q + (int) len;
            s.frames++;
            if (op == OP_PING || op == OP_PONG) {
                continue;
            }
            if (op == OP_CLOSE) {
                s.end = validCloseBody(payload) ? WsEnd.CLOSE : WsEnd.VIOLATION;
                return s;
            }
            fragments = fin ? 0 : fragments + 1;
            if (op == OP_TEXT) {
                s.end = WsEnd.TEXT;
                return s;
            }
            s.h2.write(payload, 0, payload.length);
        }
    }

    static boolean validCloseBody(byte[] body) {
        if (body.length == 0) {
            return true;
        }
        if (body.length < 2) {
            return false;
        }
        int code = (short) (((body[0] & 0xff) << 8) | (body[1] & 0xff)); // read signed, as the decoder does
        boolean validCode = code < 0 || (1000 <= code && code <= 1003) || (1007 <= code && code <= 1014)
                || 3000 <= code;
        if (!validCode) {
            return false;
        }
        try {
            StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(body, 2, body.length - 2));
            return true;
        } catch (CharacterCodingException e) {
            return false;
        }
    }

    enum H2End { COMPLETE, INCOMPLETE, BAD_PREFACE }

    /** Whether the HTTP/2 bytes the gateway received end on a frame boundary (it then waits for nothing). */
    static H2End h2Framing(byte[] h2) {
        int n = h2.length;
        int prefix = Math.min(n, PREFACE.length);
        for (int i = 0; i < prefix; i++) {
            if (h2[i] != PREFACE[i]) {
                return H2End.BAD_PREFACE;
            }
        }
        if (n < PREFACE.length) {
            return H2End.INCOMPLETE;
        }
        int p = PREFACE.length;
        while (p < n) {
            if (n - p < Http2CodecUtil.FRAME_HEADER_LENGTH) {
                return H2End.INCOMPLETE;
            }
            int len = ((h2[p] & 0xff) << 16) | ((h2[p + 1] & 0xff) << 8) | (h2[p + 2] & 0xff);
            if (n - p - Http2CodecUtil.FRAME_HEADER_LENGTH < len) {
                return H2End.INCOMPLETE;
            }
            p += Http2CodecUtil.FRAME_HEADER_LENGTH + len;
        }
        return H2End.COMPLETE;
    }

    // ------------------------------------------------------------------ what the gateway wrote

    /** Everything the gateway wrote on one connection, parsed (WebSocket frames, then the HTTP/2 inside). */
    static final class ServerView {
        boolean wsClose;
        int wsCloseCode = -1;
        int pongs;
        boolean goAway;
        long goAwayError = -1;
        final Set<Long> pingAcks = new HashSet<>();
        final Map<Integer, Http2Headers> responses = new HashMap<>();
        final Map<Integer, Long> resets = new HashMap<>();
        final List<String> problems = new ArrayList<>();
        boolean settings;

        boolean errorSignal() {
            return (wsClose && wsCloseCode != 1000) || (goAway && goAwayError != 0);
        }

        boolean anySignal() {
            return wsClose || goAway;
        }

        @Override
        public String toString() {
            return "ServerView{wsClose=" + (wsClose ? wsCloseCode : "no") + ", goAway=" + (goAway ? goAwayError : "no")
                    + ", pings=" + pingAcks.size() + ", responses=" + responses.keySet() + ", resets=" + resets
                    + ", problems=" + problems + "}";
        }
    }

    static ServerView parseServer(byte[] out) {
        ServerView v = new ServerView();
        ByteArrayOutputStream h2 = new ByteArrayOutputStream();
        int p = 0;
        while (p < out.length) {
            if (out.length - p < 2) {
                v.problems.add("truncated WebSocket frame header");
                break;
            }
            int b0 = out[p] & 0xff;
            int b1 = out[p + 1] & 0xff;
            int op = b0 & 0x0f;
            if ((b1 & 0x80) != 0) {
                v.problems.add("server frame is masked");
            }
            int len1 = b1 & 0x7f;
            int q = p + 2;
            long len;
            if (len1 == 126) {
                len = ((out[q] & 0xff) << 8) | (out[q + 1] & 0xff);
                q += 2;
            } else if (len1 == 127) {
                len = ByteBuffer.wrap(out, q, 8).getLong();
                q += 8;
            } else {
                len = len1;
            }
            if (len < 0 || out.length - q < len) {
                v.problems.add("truncated WebSocket frame payload");
                break;
            }
            if (v.wsClose) {
                v.problems.add("frame after close frame (opcode " + op + ")");
            }
            byte[] payload = Arrays.copyOfRange(out, q, q + (int) len);
            p = q + (int) len;
            switch (op) {
                case OP_BINARY, OP_CONT -> h2.write(payload, 0, payload.length);
                case OP_PONG -> v.pongs++;
                case OP_CLOSE -> {
                    v.wsClose = true;
                    v.wsCloseCode = payload.length >= 2 ? ((payload[0] & 0xff) << 8) | (payload[1] & 0xff) : 1005;
                }
                default -> v.problems.add("unexpected server opcode " + op);
            }
        }
        parseServerH2(h2.toByteArray(), v);
        return v;
    }

    private static void parseServerH2(byte[] h2, ServerView v) {
        DefaultHttp2HeadersDecoder decoder = new DefaultHttp2HeadersDecoder(false);
        ByteArrayOutputStream block = null;
        int blockStream = 0;
        int p = 0;
        try {
            decoder.maxHeaderTableSize(Http2CodecUtil.MAX_HEADER_TABLE_SIZE);
            decoder.maxHeaderListSize(Http2CodecUtil.MAX_HEADER_LIST_SIZE, Http2CodecUtil.MAX_HEADER_LIST_SIZE);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        while (p < h2.length) {
            if (h2.length - p < 9) {
                v.problems.add("truncated HTTP/2 frame header from server");
                return;
            }
            int len = ((h2[p] & 0xff) << 16) | ((h2[p + 1] & 0xff) << 8) | (h2[p + 2] & 0xff);
            int type = h2[p + 3] & 0xff;
            int flags = h2[p + 4] & 0xff;
            int stream = ByteBuffer.wrap(h2, p + 5, 4).getInt() & 0x7fffffff;
            int q = p + 9;
            if (h2.length - q < len) {
                v.problems.add("truncated HTTP/2 frame from server");
                return;
            }
            byte[] payload = Arrays.copyOfRange(h2, q, q + len);
            p = q + len;
            switch (type) {
                case 0x4 -> v.settings = true;
                case 0x6 -> {
                    if ((flags & 1) != 0 && len == 8) {
                        v.pingAcks.add(ByteBuffer.wrap(payload).getLong());
                    }
                }
                case 0x7 -> {
                    v.goAway = true;
                    v.goAwayError = len >= 8 ? ByteBuffer.wrap(payload, 4, 4).getInt() & 0xffffffffL : -2;
                }
                case 0x3 -> v.resets.put(stream, len == 4 ? ByteBuffer.wrap(payload).getInt() & 0xffffffffL : -2);
                case 0x1, 0x9 -> {
                    int from = 0;
                    int to = payload.length;
                    if (type == 0x1) {
                        block = new ByteArrayOutputStream();
                        blockStream = stream;
                        if ((flags & 0x8) != 0) {
                            int pad = payload[0] & 0xff;
                            from = 1;
                            to -= pad;
                        }
                        if ((flags & 0x20) != 0) {
                            from += 5;
                        }
                    }
                    if (block == null) {
                        v.problems.add("CONTINUATION without HEADERS from server");
                        return;
                    }
                    block.write(payload, from, Math.max(0, to - from));
                    if ((flags & 0x4) != 0) {
                        ByteBuf buf = Unpooled.wrappedBuffer(block.toByteArray());
                        try {
                            v.responses.put(blockStream, decoder.decodeHeaders(blockStream, buf));
                        } catch (Exception e) {
                            v.problems.add("undecodable response headers: " + e);
                        } finally {
                            buf.release();
                        }
                        block = null;
                    }
                }
                default -> {
                    // DATA, WINDOW_UPDATE, PRIORITY: nothing to check here
                }
            }
        }
    }
}
