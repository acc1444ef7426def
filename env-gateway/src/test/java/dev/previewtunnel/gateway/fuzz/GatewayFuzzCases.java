package dev.previewtunnel.gateway.fuzz;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http2.DefaultHttp2FrameWriter;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2Flags;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersEncoder;
import io.netty.handler.codec.http2.Http2Settings;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import static dev.previewtunnel.gateway.fuzz.GatewayFuzzWire.OP_BINARY;
import static dev.previewtunnel.gateway.fuzz.GatewayFuzzWire.OP_CLOSE;
import static dev.previewtunnel.gateway.fuzz.GatewayFuzzWire.OP_CONT;
import static dev.previewtunnel.gateway.fuzz.GatewayFuzzWire.OP_PING;
import static dev.previewtunnel.gateway.fuzz.GatewayFuzzWire.OP_PONG;
import static dev.previewtunnel.gateway.fuzz.GatewayFuzzWire.OP_TEXT;

/**
 * Generates the gateway fuzz cases: client byte streams as they arrive after a successful WebSocket upgrade
 * (masked WebSocket frames carrying an HTTP/2 client connection written with Netty's {@link DefaultHttp2FrameWriter}),
 * valid, semantically refused, structurally invalid at either layer, or mutated at random. One instance per thread
 * (it owns an {@link EmbeddedChannel} the frame writer writes into); every case is a pure function of its seed.
 */
final class GatewayFuzzCases {

    /** What the case must lead to, beyond the properties every case has. */
    enum Expect {
        /** Connection stays up, answers a PING, every stream gets the listed answer. */
        ACCEPT,
        /** The HTTP/2 layer must end the connection: GOAWAY with an error code, then close. */
        H2_ERROR,
        /** The WebSocket layer must end the connection: close frame (not 1000) or decoder error, then close. */
        WS_ERROR,
        /** The client closed cleanly: close frame 1000 answered, connection closed. */
        WS_CLOSE,
        /** Mutated at random: only the properties every case has. */
        ANY
    }

    /** Material the generator draws grants from (issued once per run). */
    record Grants(List<String[]> valid, String wrongPort, int wrongPortActual, List<String> refused,
                  List<String> expired, List<String> revoked, List<String[]> policyRefused, String kid) {
        // valid: {grant, authority}; policyRefused: {grant, authority}
    }

    static final class Case {
        final long index;
        final long seed;
        String kind;
        Expect expect;
        byte[] wire;
        int[] cuts;
        /** stream id -> allowed answers: "code:X" (ptun-error X), "rst", "status:431", "any". */
        final Map<Integer, Set<String>> streams = new LinkedHashMap<>();
        String expectedWsCloseCode; // for WS_ERROR where known
        String note = "";

        Case(long index, long seed) {
            this.index = index;
            this.seed = seed;
        }

        @Override
        public String toString() {
            return "case " + index + " (" + kind + (note.isEmpty() ? "" : ", " + note) + ", expect " + expect + ")";
        }
    }

    private static final UnpooledByteBufAllocator UNTRACKED = new UnpooledByteBufAllocator(false, true);
    private static final int MAX_WS = 256 * 1024;

    private final EmbeddedChannel sink = new EmbeddedChannel();
    private final ChannelHandlerContext ctx;
    private final Grants grants;

    GatewayFuzzCases(Grants grants) {
        this.grants = grants;
        // Only the generator's own buffers are untracked; the gateway channel under test uses the default allocator.
        sink.config().setAllocator(UNTRACKED);
        sink.pipeline().addLast("writer", new ChannelOutboundHandlerAdapter());
        ctx = sink.pipeline().context("writer");
    }

    void close() {
        sink.finishAndReleaseAll();
    }

    // ==================================================================== HTTP/2 script

    /** One unit = the bytes of one writer call (HEADERS plus its CONTINUATIONs, or one frame). */
    record Unit(int start, int end, int type, int stream) {
    }

    final class Script {
        final DefaultHttp2FrameWriter writer = new DefaultHttp2FrameWriter(Http2HeadersEncoder.NEVER_SENSITIVE, true);
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final List<Unit> units = new ArrayList<>();
        int lastStream;
        /** Set once SETTINGS_INITIAL_WINDOW_SIZE went above 2^30: a stream WINDOW_UPDATE could then overflow. */
        boolean bigWindows;

        private byte[] drain() {
            ctx.flush();
            ByteArrayOutputStream o = new ByteArrayOutputStream();
            Object m;
            while ((m = sink.readOutbound()) != null) {
                ByteBuf b = (ByteBuf) m;
                byte[] bytes = new byte[b.readableBytes()];
                b.readBytes(bytes);
                b.release();
                o.write(bytes, 0, bytes.length);
            }
            return o.toByteArray();
        }

        private void capture(int type, int stream, int start) {
            byte[] bytes = drain();
            out.write(bytes, 0, bytes.length);
            if (out.size() > start) {
                units.add(new Unit(start, out.size(), type, stream));
            }
        }

        void preface() {
            int s = out.size();
            out.write(GatewayFuzzWire.PREFACE, 0, GatewayFuzzWire.PREFACE.length);
            units.add(new Unit(s, out.size(), -1, 0));
        }

        void settings(Http2Settings settings) {
            Integer window = settings.initialWindowSize();
            bigWindows |= window != null && window > (1 << 30);
            int s = out.size();
            writer.writeSettings(ctx, settings, ctx.newPromise());
            capture(0x4, 0, s);
        }

        void settingsAck() {
            int s = out.size();
            writer.writeSettingsAck(ctx, ctx.newPromise());
            capture(0x4, 0, s);
        }

        void headers(int stream, Http2Headers h, int padding, boolean endStream, boolean priority) {
            int s = out.size();
            if (priority) {
                writer.writeHeaders(ctx, stream, h, 0, (short) 16, false, padding, endStream, ctx.newPromise());
            } else {
                writer.writeHeaders(ctx, stream, h, padding, endStream, ctx.newPromise());
            }
            lastStream = Math.max(lastStream, stream);
            capture(0x1, stream, s);
        }

        void data(int stream, byte[] bytes, int padding, boolean endStream) {
            int s = out.size();
            writer.writeData(ctx, stream, Unpooled.wrappedBuffer(bytes), padding, endStream, ctx.newPromise());
            capture(0x0, stream, s);
        }

        void ping(long payload, boolean ack) {
            int s = out.size();
            writer.writePing(ctx, ack, payload, ctx.newPromise());
            capture(0x6, 0, s);
        }

        void windowUpdate(int stream, int increment) {
            int s = out.size();
            writer.writeWindowUpdate(ctx, stream, increment, ctx.newPromise());
            capture(0x8, stream, s);
        }

        void rst(int stream, long code) {
            int s = out.size();
            writer.writeRstStream(ctx, stream, code, ctx.newPromise());
            capture(0x3, stream, s);
        }

        void priority(int stream, int dependency, short weight) {
            int s = out.size();
            writer.writePriority(ctx, stream, dependency, weight, false, ctx.newPromise());
            capture(0x2, stream, s);
        }

        void goAway(int lastStreamId, long code) {
            int s = out.size();
            writer.writeGoAway(ctx, lastStreamId, code, Unpooled.wrappedBuffer("bye".getBytes(StandardCharsets.US_ASCII)),
                    ctx.newPromise());
            capture(0x7, 0, s);
        }

        void raw(int type, int stream, int flags, byte[] payload) {
            int s = out.size();
            writer.writeFrame(ctx, (byte) type, stream, new Http2Flags((short) flags), Unpooled.wrappedBuffer(payload),
                    ctx.newPromise());
            capture(type, stream, s);
        }

        /** A raw frame header with any declared length, followed by {@code payload} (which may be shorter). */
        void rawHeader(int declaredLength, int type, int flags, int stream, byte[] payload) {
            int s = out.size();
            out.write((declaredLength >>> 16) & 0xff);
            out.write((declaredLength >>> 8) & 0xff);
            out.write(declaredLength & 0xff);
            out.write(type & 0xff);
            out.write(flags & 0xff);
            byte[] id = ByteBuffer.allocate(4).putInt(stream).array();
            out.write(id, 0, 4);
            out.write(payload, 0, payload.length);
            units.add(new Unit(s, out.size(), type, stream));
        }

        /**
         * The HPACK block for {@code h} from this script's own encoder (so its dynamic table stays in step with the
         * gateway's decoder), or null when it does not fit one frame; the caller must then send it.
         */
        byte[] ownHeaderBlock(Http2Headers h) {
            writer.writeHeaders(ctx, 1, h, 0, false, ctx.newPromise());
            byte[] all = drain();
            int len = ((all[0] & 0xff) << 16) | ((all[1] & 0xff) << 8) | (all[2] & 0xff);
            if (len != all.length - 9 || (all[4] & 0x4) == 0) {
                return null;
            }
            return Arrays.copyOfRange(all, 9, all.length);
        }

        /** The HPACK block a fresh encoder would send for {@code h} (static table and literals only). */
        byte[] headerBlock(Http2Headers h) {
            Script tmp = new Script();
            tmp.headers(1, h, 0, false, false);
            byte[] all = tmp.out.toByteArray();
            return Arrays.copyOfRange(all, 9, all.length); // one HEADERS frame: strip its 9-byte header
        }

        byte[] bytes() {
            return out.toByteArray();
        }
    }

    // ==================================================================== generation

    Case generate(long index, long seed) {
        Random r = new Random(seed);
        Case c = new Case(index, seed);
        int pick = r.nextInt(100);
        if (pick < 14) {
            valid(c, r);
        } else if (pick < 34) {
            semantic(c, r);
        } else if (pick < 48) {
            h2Violation(c, r);
        } else if (pick < 62) {
            h2Mutated(c, r);
        } else if (pick < 74) {
            wsViolation(c, r);
        } else if (pick < 77) {
            wsClose(c, r);
        } else if (pick < 94) {
            wsMutated(c, r);
        } else {
            randomBytes(c, r);
        }
        if (c.cuts == null) {
            c.cuts = cuts(r, c.wire.length);
        }
        return c;
    }

    private static final String[] VALID_EXTRA_NAMES = {"user-agent", "x-request-id", "accept", "x-trace", "via"};

    private Script opening(Random r) {
        Script s = new Script();
        s.preface();
        s.settings(randomValidSettings(r, true));
        if (r.nextInt(3) == 0) {
            s.settingsAck();
        }
        return s;
    }

    static Http2Settings randomValidSettings(Random r) {
        return randomValidSettings(r, false);
    }

    /** Valid SETTINGS; windows above 2^30 only when {@code maxWindow} (so later updates cannot overflow them). */
    static Http2Settings randomValidSettings(Random r, boolean maxWindow) {
        Http2Settings st = new Http2Settings();
        if (r.nextBoolean()) {
            st.pushEnabled(false);
        }
        if (r.nextInt(3) == 0) {
            st.headerTableSize(r.nextInt(65537));
        }
        if (r.nextInt(3) == 0) {
            st.initialWindowSize(maxWindow && r.nextInt(4) == 0 ? Integer.MAX_VALUE : r.nextInt(1 << 20));
        }
        if (r.nextInt(3) == 0) {
            st.maxFrameSize(16384 + r.nextInt(16777215 - 16384 + 1));
        }
        if (r.nextInt(4) == 0) {
            st.maxConcurrentStreams(r.nextInt(1000));
        }
        if (r.nextInt(4) == 0) {
            st.maxHeaderListSize(1024 + r.nextInt(1 << 20));
        }
        return st;
    }

    private Http2Headers connect(String authority, String grant) {
        Http2Headers h = new DefaultHttp2Headers(false);
        h.method("CONNECT");
        if (authority != null) {
            h.authority(authority);
        }
        if (grant != null) {
            h.add("ptun-grant", grant);
        }
        return h;
    }

    private void addExtras(Random r, Http2Headers h) {
        int n = r.nextInt(3);
        for (int i = 0; i < n; i++) {
            h.add(VALID_EXTRA_NAMES[r.nextInt(VALID_EXTRA_NAMES.length)], printable(r, r.nextInt(40)));
        }
    }

    /** Sprinkles frames a well-behaved client may send at any time. */
    private void validNoise(Script s, Random r, int openStream) {
        int n = r.nextInt(3);
        for (int i = 0; i < n; i++) {
            switch (r.nextInt(6)) {
                case 0 -> s.ping(r.nextLong(), false);
                case 1 -> s.windowUpdate(0, 1 + r.nextInt(1 << 20));
                case 2 -> s.settings(randomValidSettings(r));
                // Unknown frame types must be ignored; on stream 0 only (see the note on unknownFrameOnIdleStream).
                case 3 -> s.raw(0x0b + r.nextInt(0xf0), 0, r.nextInt(256), randomBytes(r, r.nextInt(64)));
                case 4 -> s.priority(s.lastStream + 2 + 2 * r.nextInt(10), 0, (short) (1 + r.nextInt(256)));
                default -> {
                    if (openStream > 0 && !s.bigWindows) {
                        s.windowUpdate(openStream, 1 + r.nextInt(1 << 16));
                    } else {
                        s.ping(r.nextLong(), false);
                    }
                }
            }
        }
    }

    private int nextStream(Script s, Random r) {
        return s.lastStream + 1 + 2 * (r.nextInt(4) == 0 ? r.nextInt(50) : 0) + (s.lastStream == 0 ? 0 : 1);
    }

    /** Writes one CONNECT stream (HEADERS possibly split into CONTINUATIONs by hand, maybe DATA after it). */
    private int stream(Script s, Random r, Http2Headers h, Case c, Set<String> answer, boolean mayReset) {
        int id = nextStream(s, r);
        int padding = r.nextInt(5) == 0 ? r.nextInt(256) : 0;
        boolean endStream = r.nextInt(20) == 0;
        byte[] block = r.nextInt(6) == 0 && padding == 0 ? s.ownHeaderBlock(h) : null;
        if (block != null) {
            // Valid CONTINUATION sequence written frame by frame.
            int parts = 1 + r.nextInt(Math.min(4, Math.max(1, block.length)));
            int[] at = cutPoints(r, block.length, parts);
            int from = 0;
            for (int i = 0; i <= at.length; i++) {
                int to = i < at.length ? at[i] : block.length;
                boolean last = i == at.length;
                int flags = (last ? 0x4 : 0) | (i == 0 && endStream ? 0x1 : 0);
                s.raw(i == 0 ? 0x1 : 0x9, id, flags, Arrays.copyOfRange(block, from, to));
                from = to;
            }
            s.lastStream = Math.max(s.lastStream, id);
        } else {
            s.headers(id, h, padding, endStream, r.nextInt(8) == 0);
        }
        boolean reset = false;
        // HEADERS that fail validation never create the stream on the gateway (Netty resets it without opening
        // it): DATA or RST_STREAM for it afterwards would address an idle stream, a connection error.
        if (!endStream && !answer.contains("rst")) {
            if (r.nextInt(3) == 0) {
                s.data(id, randomBytes(r, r.nextInt(2048)), r.nextInt(6) == 0 ? r.nextInt(200) : 0, r.nextInt(4) == 0);
            }
            if (mayReset && r.nextInt(8) == 0) {
                s.rst(id, 8); // CANCEL
                reset = true;
            }
        }
        c.streams.put(id, reset ? Set.of("any") : answer);
        return id;
    }

    private void valid(Case c, Random r) {
        c.kind = "valid";
        c.expect = Expect.ACCEPT;
        Script s = opening(r);
        int streams = 1 + r.nextInt(2);
        int open = 0;
        for (int i = 0; i < streams; i++) {
            validNoise(s, r, open);
            String[] g = grants.valid().get(r.nextInt(grants.valid().size()));
            String authority = r.nextInt(5) == 0 ? g[1].toUpperCase(java.util.Locale.ROOT) : g[1];
            Http2Headers h = connect(authority, g[0]);
            addExtras(r, h);
            open = stream(s, r, h, c, Set.of("code:target_unreachable"), true);
        }
        validNoise(s, r, open);
        if (r.nextInt(10) == 0) {
            s.goAway(0, 0);
        }
        c.wire = wsFrame(r, s.bytes(), c);
    }

    private void semantic(Case c, Random r) {
        c.kind = "semantic";
        c.expect = Expect.ACCEPT;
        Script s = opening(r);
        int streams = 1 + r.nextInt(3);
        int open = 0;
        StringBuilder what = new StringBuilder();
        for (int i = 0; i < streams; i++) {
            validNoise(s, r, open);
            String[] g = grants.valid().get(r.nextInt(grants.valid().size()));
            Http2Headers h;
            Set<String> answer;
            int sub = r.nextInt(24);
            if ((sub == 4 || sub == 6 || sub == 7 || sub == 22) && r.nextInt(4) != 0) {
                // These make the gateway verify an Ed25519 signature every time (nothing to cache): keep them to
                // a quarter of their share so the run stays fast; every run still has hundreds of each.
                sub = r.nextInt(24);
            }
            what.append(sub).append(' ');
            switch (sub) {
                case 0 -> {
                    h = connect(g[1], g[0]);
                    answer = Set.of("code:target_unreachable");
                }
                case 1 -> {
                    h = connect("localhost:" + grants.wrongPortActual(), grants.wrongPort());
                    answer = Set.of("code:grant_refused");
                }
                case 2 -> {
                    // Exact target required: the same port under another loopback spelling is another authority.
                    String port = g[1].substring(g[1].lastIndexOf(':') + 1);
                    h = connect((g[1].startsWith("localhost") ? "127.0.0.1:" : "localhost:") + port, g[0]);
                    answer = Set.of("code:grant_refused");
                }
                case 3 -> {
                    h = connect(g[1], garbageGrant(r));
                    // Control characters in a value are refused by HTTP/2 header validation (RST_STREAM).
                    answer = Set.of("code:grant_refused", "rst");
                }
                case 4 -> {
                    h = connect(g[1], forged(r, g[0]));
                    answer = Set.of("code:grant_refused");
                }
                case 5 -> {
                    h = connect(g[1], algNone(r, g[0]));
                    answer = Set.of("code:grant_refused");
                }
                case 6 -> {
                    String refused = grants.refused().get(r.nextInt(grants.refused().size()));
                    h = connect(g[1], refused);
                    answer = Set.of("code:grant_refused");
                }
                case 7 -> {
                    h = connect("localhost:5173", grants.expired().get(r.nextInt(grants.expired().size())));
                    answer = Set.of("code:grant_expired");
                }
                case 8 -> {
                    h = connect("localhost:5173", grants.revoked().get(r.nextInt(grants.revoked().size())));
                    answer = Set.of("code:grant_revoked");
                }
                case 9 -> {
                    String[] p = grants.policyRefused().get(r.nextInt(grants.policyRefused().size()));
                    h = connect(p[1], p[0]);
                    answer = Set.of("code:policy_refused");
                }
                case 10 -> {
                    h = connect(g[1], null);
                    answer = Set.of("code:grant_refused");
                }
                case 11 -> {
                    h = connect(g[1], "");
                    answer = Set.of("code:grant_refused");
                }
                case 12 -> {
                    h = connect(g[1], g[0]);
                    h.add("ptun-grant", r.nextBoolean() ? g[0] : forged(r, g[0]));
                    answer = Set.of("code:bad_request");
                }
                case 13 -> {
                    h = connect(g[1], g[0]);
                    String[] methods = {"GET", "POST", "connect", "CONNECT ", "OPTIONS", "PRI", ""};
                    h.method(methods[r.nextInt(methods.length)]);
                    answer = Set.of("code:bad_request", "rst");
                }
                case 14 -> {
                    h = connect(g[1], g[0]);
                    h.remove(Http2Headers.PseudoHeaderName.METHOD.value());
                    answer = Set.of("code:bad_request");
                }
                case 15 -> {
                    h = connect(g[1], g[0]);
                    switch (r.nextInt(3)) {
                        case 0 -> h.path("/");
                        case 1 -> h.scheme("https");
                        default -> h.set(":protocol", "websocket");
                    }
                    answer = Set.of("code:bad_request");
                }
                case 16 -> {
                    String[] bad = {"localhost", "localhost:", "localhost:0", "localhost:65536", "user@localhost:80",
                            "[::1:80", "[zz]:80", "a b:80", "localhost:80/x", "x".repeat(301) + ":80", ":80",
                            "localhost:+80", "localhost:8x", "[::1]", "[::1]80", "local\u00e9host:80", "h:1:2"};
                    h = connect(bad[r.nextInt(bad.length)], g[0]);
                    answer = Set.of("code:bad_request", "rst");
                }
                case 17 -> {
                    h = connect(null, g[0]);
                    answer = Set.of("code:bad_request");
                }
                case 18 -> {
                    h = connect(g[1], "x".repeat(8193 + r.nextInt(3000)));
                    answer = Set.of("code:grant_refused");
                }
                case 19 -> {
                    h = connect(g[1], g[0]);
                    String[] names = {"X-Upper", "connection", "keep-alive", "proxy-connection", "transfer-encoding",
                            "upgrade", "Ptun-Grant", "bad name", "bad:colon"};
                    String name = names[r.nextInt(names.length)];
                    h.add(name, "x");
                    answer = Set.of("rst");
                }
                case 20 -> {
                    h = connect(g[1], g[0]);
                    h.add(":foo", "bar");
                    answer = Set.of("rst");
                }
                case 21 -> {
                    h = connect(g[1], g[0]);
                    h.add("te", "gzip");
                    answer = Set.of("rst");
                }
                case 22 -> {
                    h = connect(g[1], validLooking(r, g[0]));
                    answer = Set.of("code:grant_refused");
                }
                default -> {
                    h = connect(g[1], g[0]);
                    h.add("x-junk", printable(r, 1 + r.nextInt(2000)));
                    answer = Set.of("code:target_unreachable");
                }
            }
            int id = stream(s, r, h, c, answer, true);
            // A stream whose HEADERS failed validation was never created on the gateway: later frames for it
            // would address an idle stream (connection error), so only well-formed streams get noise.
            open = answer.contains("rst") ? 0 : id;
        }
        c.note = "subtypes " + what.toString().trim();
        validNoise(s, r, open);
        c.wire = wsFrame(r, s.bytes(), c);
    }

    /** A structural HTTP/2 violation after a valid prefix: the gateway must answer GOAWAY(error) and close. */
    private void h2Violation(Case c, Random r) {
        c.kind = "h2-violation";
        c.expect = Expect.H2_ERROR;
        Script s = new Script();
        int kind = r.nextInt(22);
        if (kind == 0) {
            // Corrupt client preface (or an HTTP/1 request where HTTP/2 is expected).
            byte[] pre = r.nextBoolean() ? GatewayFuzzWire.PREFACE.clone()
                    : "GET /tunnel HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
            if (pre.length == GatewayFuzzWire.PREFACE.length) {
                int at = r.nextInt(pre.length);
                pre[at] = (byte) (pre[at] ^ (1 + r.nextInt(255)));
            }
            s.out.write(pre, 0, pre.length);
            s.settings(randomValidSettings(r));
            c.note = "bad preface";
            c.wire = wsFrame(r, s.bytes(), c);
            return;
        }
        s.preface();
        if (kind == 1) {
            s.ping(r.nextLong(), false);
            c.note = "first frame not SETTINGS";
            c.wire = wsFrame(r, s.bytes(), c);
            return;
        }
        s.settings(randomValidSettings(r));
        // A valid prefix: some streams answered before the violation.
        int streams = r.nextInt(3);
        int open = 0;
        for (int i = 0; i < streams; i++) {
            validNoise(s, r, open);
            String[] g = grants.valid().get(r.nextInt(grants.valid().size()));
            open = stream(s, r, connect(g[1], g[0]), c, Set.of("any"), false);
        }
        String[] g = grants.valid().get(r.nextInt(grants.valid().size()));
        switch (kind) {
            case 2 -> {
                s.raw(0x0, 0, 0, randomBytes(r, r.nextInt(100)));
                c.note = "DATA on stream 0";
            }
            case 3 -> {
                s.raw(0x1, 0, 0x4, s.headerBlock(connect(g[1], g[0])));
                c.note = "HEADERS on stream 0";
            }
            case 4 -> {
                s.raw(0x1, s.lastStream == 0 ? 2 : s.lastStream + 1, 0x4, s.headerBlock(connect(g[1], g[0])));
                c.note = "even client stream id";
            }
            case 5, 6 -> {
                int[] types = {0x0, 0x1, 0x4, 0x6, 0x8, 0x3, 0x9, 0x2, 0x7, 0x20};
                int declared = 65537 + r.nextInt(16777215 - 65537 + 1);
                s.rawHeader(declared, types[r.nextInt(types.length)], r.nextInt(256), r.nextInt(10),
                        randomBytes(r, r.nextInt(200)));
                c.note = "frame longer than SETTINGS_MAX_FRAME_SIZE";
            }
            case 7 -> {
                s.raw(0x9, s.lastStream + 2 + (s.lastStream == 0 ? -1 : 0), 0x4,
                        s.headerBlock(connect(g[1], g[0])));
                c.note = "CONTINUATION without HEADERS";
            }
            case 8 -> {
                int id = s.lastStream == 0 ? 1 : s.lastStream + 2;
                byte[] block = s.headerBlock(connect(g[1], g[0]));
                s.raw(0x1, id, 0, Arrays.copyOf(block, Math.max(1, block.length / 2)));
                switch (r.nextInt(3)) {
                    case 0 -> s.ping(r.nextLong(), false);
                    case 1 -> s.raw(0x0, id, 0, randomBytes(r, 10));
                    default -> s.raw(0x1, id + 2, 0x4, block);
                }
                c.note = "HEADERS interrupted before END_HEADERS";
            }
            case 9 -> {
                byte[] block = s.headerBlock(connect(g[1], g[0]));
                byte[] payload = ByteBuffer.allocate(4 + block.length).putInt(2).put(block).array();
                s.raw(0x5, Math.max(1, s.lastStream), 0x4, payload);
                c.note = "PUSH_PROMISE from a client";
            }
            case 10 -> {
                int[][] bad = {{0x2, 2}, {0x2, 0x7fffffff}, {0x4, 0x80000000}, {0x4, -1}, {0x5, 100}, {0x5, 16383},
                        {0x5, 16777216}, {0x5, -1}};
                int[] pick = bad[r.nextInt(bad.length)];
                s.raw(0x4, 0, 0, ByteBuffer.allocate(6).putShort((short) pick[0]).putInt(pick[1]).array());
                c.note = "SETTINGS value out of range (" + pick[0] + "=" + Integer.toUnsignedString(pick[1]) + ")";
            }
            case 11 -> {
                s.raw(0x4, 1 + r.nextInt(100), 0, new byte[0]);
                c.note = "SETTINGS on a stream";
            }
            case 12 -> {
                if (r.nextBoolean()) {
                    s.raw(0x4, 0, 0, randomBytes(r, 1 + 6 * r.nextInt(3) + 1 + r.nextInt(4)));
                    c.note = "SETTINGS length not a multiple of 6";
                } else {
                    s.raw(0x4, 0, 0x1, randomBytes(r, 1 + r.nextInt(12)));
                    c.note = "SETTINGS ack with a payload";
                }
            }
            case 13 -> {
                if (r.nextBoolean()) {
                    int len = r.nextInt(20);
                    if (len == 8) {
                        len = 9;
                    }
                    s.raw(0x6, 0, 0, randomBytes(r, len));
                    c.note = "PING length != 8";
                } else {
                    s.raw(0x6, 1 + r.nextInt(99), 0, randomBytes(r, 8));
                    c.note = "PING on a stream";
                }
            }
            case 14 -> {
                s.raw(0x8, 0, 0, new byte[4]);
                c.note = "connection WINDOW_UPDATE of 0";
            }
            case 15 -> {
                s.windowUpdate(0, Integer.MAX_VALUE);
                s.windowUpdate(0, Integer.MAX_VALUE);
                c.note = "connection window overflow";
            }
            case 16 -> {
                s.raw(0x7, 1 + r.nextInt(99), 0, new byte[8]);
                c.note = "GOAWAY on a stream";
            }
            case 17 -> {
                s.rst(s.lastStream + 2 + 2 * r.nextInt(20) + (s.lastStream == 0 ? -1 : 0), 8);
                c.note = "RST_STREAM on an idle stream";
            }
            case 18 -> {
                s.data(s.lastStream + 2 + 2 * r.nextInt(20) + (s.lastStream == 0 ? -1 : 0), randomBytes(r, 10), 0,
                        false);
                c.note = "DATA on an idle stream";
            }
            case 19 -> {
                // Index 0; an index far beyond any table; a table size update beyond the limit; a literal whose
                // name is cut off by the end of the block.
                byte[][] bad = {{(byte) 0x80}, {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0x7f},
                        {0x3f, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x0f}, {0x40, 0x05}};
                s.raw(0x1, s.lastStream == 0 ? 1 : s.lastStream + 2, 0x4, bad[r.nextInt(bad.length)]);
                c.note = "undecodable HPACK";
            }
            case 20 -> {
                if (r.nextBoolean()) {
                    s.raw(0x3, Math.max(1, s.lastStream), 0, randomBytes(r, r.nextBoolean() ? 3 : 5));
                    c.note = "RST_STREAM length != 4";
                } else {
                    s.raw(0x8, 0, 0, randomBytes(r, r.nextBoolean() ? 3 : 5));
                    c.note = "WINDOW_UPDATE length != 4";
                }
            }
            default -> {
                int id = s.lastStream == 0 ? 1 : s.lastStream + 2;
                s.headers(id, connect(g[1], g[0]), 0, false, false);
                c.streams.put(id, Set.of("any"));
                byte[] body = randomBytes(r, r.nextInt(20));
                byte[] payload = new byte[1 + body.length];
                payload[0] = (byte) (body.length + 1 + r.nextInt(200)); // pad length beyond the payload
                System.arraycopy(body, 0, payload, 1, body.length);
                s.raw(0x0, id, 0x8, payload);
                c.note = "DATA padding longer than the frame";
            }
        }
        // Whatever follows the violation must not matter.
        if (r.nextBoolean()) {
            validNoise(s, r, 0);
        }
        c.wire = wsFrame(r, s.bytes(), c);
    }

    /** A valid or semantic script, then mutated at the HTTP/2 byte level. */
    private void h2Mutated(Case c, Random r) {
        Case base = new Case(c.index, c.seed);
        Script s = new Script();
        s.preface();
        s.settings(randomValidSettings(r));
        int streams = 1 + r.nextInt(3);
        for (int i = 0; i < streams; i++) {
            validNoise(s, r, 0);
            String[] g = grants.valid().get(r.nextInt(grants.valid().size()));
            stream(s, r, connect(g[1], r.nextInt(4) == 0 ? garbageGrant(r) : g[0]), base, Set.of("any"), true);
        }
        byte[] h2 = s.bytes();
        List<Unit> units = s.units;
        int m = r.nextInt(13);
        Unit u = units.get(r.nextInt(units.size()));
        switch (m) {
            case 0 -> {
                h2 = flipBits(r, h2, 1 + r.nextInt(8));
                c.note = "bit flips";
            }
            case 1 -> {
                h2 = Arrays.copyOf(h2, r.nextInt(h2.length + 1));
                c.note = "truncated";
            }
            case 2 -> {
                h2 = splice(h2, u.end(), Arrays.copyOfRange(h2, u.start(), u.end()), 0);
                c.note = "unit duplicated (type " + u.type() + ")";
            }
            case 3 -> {
                if (u.type() >= 0) {
                    int len = r.nextInt(4) == 0 ? r.nextInt(1 << 24) : Math.max(0, (u.end() - u.start() - 9)
                            + r.nextInt(33) - 16);
                    h2[u.start()] = (byte) (len >>> 16);
                    h2[u.start() + 1] = (byte) (len >>> 8);
                    h2[u.start() + 2] = (byte) len;
                }
                c.note = "length field corrupted";
            }
            case 4 -> {
                if (u.type() >= 0) {
                    int[] ids = {0, 2, 4, 0x7fffffff, r.nextInt(), u.stream() + 2, Math.max(0, u.stream() - 2)};
                    ByteBuffer.wrap(h2, u.start() + 5, 4).putInt(ids[r.nextInt(ids.length)]);
                }
                c.note = "stream id corrupted";
            }
            case 5 -> {
                if (u.type() >= 0) {
                    h2[u.start() + 3] = (byte) r.nextInt(256);
                }
                c.note = "frame type corrupted";
            }
            case 6 -> {
                if (u.type() >= 0) {
                    h2[u.start() + 4] = (byte) r.nextInt(256);
                }
                c.note = "flags corrupted";
            }
            case 7 -> {
                h2 = splice(h2, r.nextInt(h2.length + 1), randomBytes(r, 1 + r.nextInt(64)), 0);
                c.note = "garbage inserted";
            }
            case 8 -> {
                int from = r.nextInt(h2.length);
                h2 = splice(h2, from, new byte[0], Math.min(h2.length - from, 1 + r.nextInt(64)));
                c.note = "range deleted";
            }
            case 9 -> {
                Unit a = units.get(r.nextInt(units.size()));
                Unit b = units.get(r.nextInt(units.size()));
                if (a.start() > b.start()) {
                    Unit t = a;
                    a = b;
                    b = t;
                }
                if (a.end() <= b.start()) {
                    ByteArrayOutputStream o = new ByteArrayOutputStream();
                    o.write(h2, 0, a.start());
                    o.write(h2, b.start(), b.end() - b.start());
                    o.write(h2, a.end(), b.start() - a.end());
                    o.write(h2, a.start(), a.end() - a.start());
                    o.write(h2, b.end(), h2.length - b.end());
                    h2 = o.toByteArray();
                }
                c.note = "units swapped";
            }
            case 10 -> {
                // The same frame many times over (SETTINGS / PING / WINDOW_UPDATE / HEADERS floods, small scale).
                byte[] unit = Arrays.copyOfRange(h2, u.start(), u.end());
                ByteArrayOutputStream o = new ByteArrayOutputStream();
                o.write(h2, 0, u.end());
                int times = 2 + r.nextInt(60);
                for (int i = 0; i < times; i++) {
                    o.write(unit, 0, unit.length);
                }
                o.write(h2, u.end(), h2.length - u.end());
                h2 = o.toByteArray();
                c.note = "unit repeated " + times + "x (type " + u.type() + ")";
            }
            case 11 -> {
                // An unknown (extension) frame type on a stream that does not exist (any more).
                Script more = new Script();
                more.out.write(h2, 0, h2.length);
                more.raw(0x0b + r.nextInt(0xf0), r.nextBoolean() ? s.lastStream + 2 : Math.max(1, s.lastStream - 2),
                        r.nextInt(256), randomBytes(r, r.nextInt(32)));
                h2 = more.bytes();
                c.note = "unknown frame type on a stream that does not exist";
            }
            default -> {
                // A header list beyond the limit, or up to the limit: 431, reset or GOAWAY.
                String[] g = grants.valid().get(r.nextInt(grants.valid().size()));
                Http2Headers h = connect(g[1], g[0]);
                int target = 12_000 + r.nextInt(20_000);
                int i = 0;
                while (target > 0) {
                    int len = Math.min(target, 4000);
                    h.add("x-big-" + i++, printable(r, len));
                    target -= len + 40;
                }
                Script more = new Script();
                more.out.write(h2, 0, h2.length);
                more.lastStream = s.lastStream;
                more.headers(s.lastStream + 2, h, 0, false, false);
                h2 = more.bytes();
                c.note = "oversized header list";
            }
        }
        c.kind = "h2-mutated";
        c.expect = Expect.ANY;
        c.wire = wsFrame(r, h2, c);
    }

    /** A WebSocket-level violation after a valid prefix of frames. */
    private void wsViolation(Case c, Random r) {
        c.kind = "ws-violation";
        c.expect = Expect.WS_ERROR;
        Script s = opening(r);
        if (r.nextBoolean()) {
            String[] g = grants.valid().get(r.nextInt(grants.valid().size()));
            stream(s, r, connect(g[1], g[0]), c, Set.of("any"), false);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] h2 = s.bytes();
        // A valid prefix ending on a WebSocket frame boundary (the HTTP/2 inside may stop anywhere).
        int cut = r.nextInt(h2.length + 1);
        GatewayFuzzWire.frame(out, r, true, OP_BINARY, Arrays.copyOf(h2, cut));
        byte[] p = randomBytes(r, r.nextInt(40));
        int kind = r.nextInt(16);
        switch (kind) {
            case 0 -> {
                GatewayFuzzWire.rawFrame(out, r, true, 0, OP_BINARY, false, p, p.length, -1);
                c.note = "unmasked frame";
            }
            case 1 -> {
                GatewayFuzzWire.frame(out, r, r.nextBoolean(), OP_TEXT, printable(r, r.nextInt(30))
                        .getBytes(StandardCharsets.UTF_8));
                c.note = "text frame";
                c.expectedWsCloseCode = "1003";
            }
            case 2 -> {
                GatewayFuzzWire.frame(out, r, true, 3 + r.nextInt(5), p);
                c.note = "reserved data opcode";
            }
            case 3 -> {
                GatewayFuzzWire.frame(out, r, true, 11 + r.nextInt(5), p);
                c.note = "reserved control opcode";
            }
            case 4 -> {
                GatewayFuzzWire.rawFrame(out, r, true, 1 + r.nextInt(7), OP_BINARY, true, p, p.length, -1);
                c.note = "RSV bits without an extension";
            }
            case 5 -> {
                int[] ops = {OP_PING, OP_PONG, OP_CLOSE};
                GatewayFuzzWire.rawFrame(out, r, false, 0, ops[r.nextInt(3)], true, new byte[0], 0, -1);
                c.note = "fragmented control frame";
            }
            case 6 -> {
                byte[] big = randomBytes(r, 126 + r.nextInt(200));
                GatewayFuzzWire.frame(out, r, true, r.nextBoolean() ? OP_PING : OP_PONG, big);
                c.note = "control frame payload > 125";
            }
            case 7 -> {
                GatewayFuzzWire.frame(out, r, true, OP_CLOSE, new byte[] {3});
                c.note = "close frame with a 1-byte body";
            }
            case 8 -> {
                GatewayFuzzWire.frame(out, r, true, OP_CONT, p);
                c.note = "continuation outside a fragmented message";
            }
            case 9 -> {
                GatewayFuzzWire.frame(out, r, false, OP_BINARY, p);
                GatewayFuzzWire.frame(out, r, true, r.nextBoolean() ? OP_BINARY : OP_TEXT, p);
                c.note = "new message inside a fragmented one";
            }
            case 10 -> {
                long declared = r.nextInt(3) == 0 ? MAX_WS + 1 : MAX_WS + 1 + (r.nextLong() & 0x3fffffffffffffffL);
                GatewayFuzzWire.rawFrame(out, r, true, 0, OP_BINARY, true, randomBytes(r, r.nextInt(100)),
                        declared, -1);
                c.note = "declared length beyond maxWebSocketMessage";
                c.expectedWsCloseCode = "1009";
            }
            case 11 -> {
                GatewayFuzzWire.rawFrame(out, r, true, 0, OP_BINARY, true, new byte[0], r.nextInt(126), 1);
                c.note = "non-minimal 16-bit length";
            }
            case 12 -> {
                GatewayFuzzWire.rawFrame(out, r, true, 0, OP_BINARY, true, new byte[0], r.nextInt(65536), 2);
                c.note = "non-minimal 64-bit length";
            }
            case 13 -> {
                GatewayFuzzWire.rawFrame(out, r, true, 0, OP_BINARY, true, new byte[0],
                        Long.MIN_VALUE | r.nextLong(), 2);
                c.note = "negative 64-bit length";
            }
            case 14 -> {
                int[] codes = {0, 1, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999};
                int code = codes[r.nextInt(codes.length)];
                GatewayFuzzWire.frame(out, r, true, OP_CLOSE, new byte[] {(byte) (code >> 8), (byte) code});
                c.note = "close frame with invalid status " + code;
            }
            default -> {
                byte[] body = {0x03, (byte) 0xe8, (byte) 0xc3, (byte) 0x28, (byte) 0xed, (byte) 0xa0, (byte) 0x80};
                GatewayFuzzWire.frame(out, r, true, OP_CLOSE, body);
                c.note = "close frame with invalid UTF-8 reason";
            }
        }
        if (r.nextBoolean()) {
            GatewayFuzzWire.frame(out, r, true, OP_BINARY, randomBytes(r, r.nextInt(50)));
        }
        c.wire = out.toByteArray();
    }

    private void wsClose(Case c, Random r) {
        c.kind = "ws-close";
        c.expect = Expect.WS_CLOSE;
        Script s = opening(r);
        if (r.nextBoolean()) {
            String[] g = grants.valid().get(r.nextInt(grants.valid().size()));
            stream(s, r, connect(g[1], g[0]), c, Set.of("code:target_unreachable"), false);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        GatewayFuzzWire.frame(out, r, true, OP_BINARY, s.bytes());
        int[] codes = {1000, 1001, 1002, 1003, 1007, 1011, 3000, 4999};
        byte[] body;
        switch (r.nextInt(3)) {
            case 0 -> body = new byte[0];
            case 1 -> {
                int code = codes[r.nextInt(codes.length)];
                body = new byte[] {(byte) (code >> 8), (byte) code};
            }
            default -> {
                byte[] reason = "bye \u00e9".getBytes(StandardCharsets.UTF_8);
                body = new byte[2 + reason.length];
                body[0] = 0x03;
                body[1] = (byte) 0xe8;
                System.arraycopy(reason, 0, body, 2, reason.length);
            }
        }
        GatewayFuzzWire.frame(out, r, true, OP_CLOSE, body);
        if (r.nextBoolean()) {
            GatewayFuzzWire.frame(out, r, true, OP_BINARY, randomBytes(r, r.nextInt(50))); // ignored after close
        }
        c.wire = out.toByteArray();
    }

    /** A valid or semantic case, mutated at the WebSocket byte level. */
    private void wsMutated(Case c, Random r) {
        Case base = new Case(c.index, c.seed);
        if (r.nextBoolean()) {
            valid(base, r);
        } else {
            semantic(base, r);
        }
        byte[] w = base.wire;
        int m = r.nextInt(9);
        switch (m) {
            case 0 -> {
                w = flipBits(r, w, 1 + r.nextInt(8));
                c.note = "bit flips";
            }
            case 1 -> {
                w = Arrays.copyOf(w, r.nextInt(w.length + 1));
                c.note = "truncated";
            }
            case 2 -> {
                int from = r.nextInt(w.length);
                int to = Math.min(w.length, from + 1 + r.nextInt(200));
                w = splice(w, to, Arrays.copyOfRange(w, from, to), 0);
                c.note = "range duplicated";
            }
            case 3 -> {
                int from = r.nextInt(w.length);
                w = splice(w, from, new byte[0], Math.min(w.length - from, 1 + r.nextInt(100)));
                c.note = "range deleted";
            }
            case 4 -> {
                w = splice(w, r.nextInt(w.length + 1), randomBytes(r, 1 + r.nextInt(40)), 0);
                c.note = "garbage inserted";
            }
            case 5 -> {
                w[0] = (byte) r.nextInt(256);
                c.note = "first frame header byte 0 replaced";
            }
            case 6 -> {
                w[1] = (byte) (w[1] ^ 0x80);
                c.note = "mask bit toggled";
            }
            case 7 -> {
                w[1] = (byte) ((w[1] & 0x80) | r.nextInt(128));
                c.note = "length byte replaced";
            }
            default -> {
                w = splice(w, 0, new byte[] {(byte) (0x80 | OP_PING), (byte) (0x80 | 10), 1, 2, 3, 4}, 0);
                c.note = "ping frame whose declared length overlaps the next frame";
            }
        }
        c.kind = "ws-mutated";
        c.expect = Expect.ANY;
        c.wire = w;
    }

    private void randomBytes(Case c, Random r) {
        c.kind = "random";
        c.expect = Expect.ANY;
        if (r.nextBoolean()) {
            c.wire = randomBytes(r, r.nextInt(2000));
            c.note = "raw bytes";
        } else {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            int frames = 1 + r.nextInt(4);
            for (int i = 0; i < frames; i++) {
                GatewayFuzzWire.frame(out, r, true, OP_BINARY, randomBytes(r, r.nextInt(300)));
            }
            c.wire = out.toByteArray();
            c.note = "binary frames of random bytes";
        }
    }

    // ==================================================================== WebSocket framing of HTTP/2 bytes

    /** Splits HTTP/2 bytes into masked binary messages (sometimes fragmented), with pings and pongs between. */
    private byte[] wsFrame(Random r, byte[] h2, Case c) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int messages = 1 + r.nextInt(Math.min(6, Math.max(1, h2.length / 16)));
        int[] at = cutPoints(r, h2.length, messages);
        int from = 0;
        for (int i = 0; i <= at.length; i++) {
            int to = i < at.length ? at[i] : h2.length;
            byte[] part = Arrays.copyOfRange(h2, from, to);
            from = to;
            if (r.nextInt(6) == 0) {
                GatewayFuzzWire.frame(out, r, true, r.nextBoolean() ? OP_PING : OP_PONG, randomBytes(r, r.nextInt(126)));
            }
            if (part.length > 1 && r.nextInt(4) == 0) {
                int fragments = 2 + r.nextInt(3);
                int[] fat = cutPoints(r, part.length, fragments);
                int f = 0;
                for (int j = 0; j <= fat.length; j++) {
                    int t = j < fat.length ? fat[j] : part.length;
                    GatewayFuzzWire.frame(out, r, j == fat.length, j == 0 ? OP_BINARY : OP_CONT,
                            Arrays.copyOfRange(part, f, t));
                    f = t;
                    if (j < fat.length && r.nextInt(5) == 0) {
                        GatewayFuzzWire.frame(out, r, true, OP_PING, randomBytes(r, r.nextInt(20)));
                    }
                }
            } else {
                GatewayFuzzWire.frame(out, r, true, OP_BINARY, part);
            }
        }
        if (r.nextInt(10) == 0) {
            GatewayFuzzWire.frame(out, r, true, OP_BINARY, new byte[0]);
        }
        return out.toByteArray();
    }

    /** Where to split a case's bytes into reads: usually one read, sometimes many small ones. */
    static int[] cuts(Random r, int length) {
        int mode = r.nextInt(10);
        if (mode < 6 || length < 2) {
            return new int[0];
        }
        if (mode < 9) {
            return cutPoints(r, length, 2 + r.nextInt(4));
        }
        int step = 1 + r.nextInt(7);
        int n = Math.min(400, (length - 1) / step);
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = (i + 1) * step;
        }
        return out;
    }

    /** {@code parts - 1} sorted distinct cut points strictly inside (0, length). */
    static int[] cutPoints(Random r, int length, int parts) {
        if (length < 2 || parts < 2) {
            return new int[0];
        }
        int n = Math.min(parts - 1, length - 1);
        java.util.TreeSet<Integer> set = new java.util.TreeSet<>();
        while (set.size() < n) {
            set.add(1 + r.nextInt(length - 1));
        }
        return set.stream().mapToInt(Integer::intValue).toArray();
    }

    // ==================================================================== grants and bytes

    private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();

    static String garbageGrant(Random r) {
        switch (r.nextInt(6)) {
            case 0:
                return printable(r, 1 + r.nextInt(200));
            case 1:
                return B64.encodeToString(randomBytes(r, r.nextInt(60))) + "." + B64.encodeToString(randomBytes(r,
                        r.nextInt(200))) + "." + B64.encodeToString(randomBytes(r, 64));
            case 2:
                return "a.b.c";
            case 3:
                return "..";
            case 4:
                return new String(randomBytes(r, 1 + r.nextInt(100)), StandardCharsets.ISO_8859_1);
            default:
                return B64.encodeToString("{\"alg\":\"HS256\",\"typ\":\"JWT\"}".getBytes(StandardCharsets.UTF_8))
                        + "." + B64.encodeToString("{}".getBytes(StandardCharsets.UTF_8)) + "."
                        + B64.encodeToString(randomBytes(r, 32));
        }
    }

    /** A real grant with one character of its header, payload or signature changed. */
    static String forged(Random r, String grant) {
        char[] ch = grant.toCharArray();
        // Not the signature's last character: its low bits are base64 padding and may decode to the same bytes.
        int at = r.nextInt(ch.length - 1);
        while (ch[at] == '.') {
            at = r.nextInt(ch.length - 1);
        }
        ch[at] = ch[at] == 'A' ? 'B' : 'A';
        return new String(ch);
    }

    /** The real payload under {@code alg: none} (and an empty or copied signature). */
    static String algNone(Random r, String grant) {
        String[] parts = grant.split("\\.");
        String header = B64.encodeToString(("{\"alg\":\"" + (r.nextBoolean() ? "none" : "None")
                + "\",\"typ\":\"ptun-grant\"}").getBytes(StandardCharsets.UTF_8));
        return header + "." + parts[1] + "." + (r.nextBoolean() ? "" : parts[2]);
    }

    /** Real header (real kid), random payload, random signature: exercises the signature check itself. */
    String validLooking(Random r, String grant) {
        String[] parts = grant.split("\\.");
        return parts[0] + "." + B64.encodeToString(("{\"env\":\"fuzz-env\",\"r\":" + r.nextInt() + "}")
                .getBytes(StandardCharsets.UTF_8)) + "." + B64.encodeToString(randomBytes(r, 64));
    }

    static String printable(Random r, int n) {
        char[] c = new char[n];
        for (int i = 0; i < n; i++) {
            c[i] = (char) (0x21 + r.nextInt(0x7e - 0x21));
        }
        return new String(c);
    }

    static byte[] randomBytes(Random r, int n) {
        byte[] b = new byte[n];
        r.nextBytes(b);
        return b;
    }

    static byte[] flipBits(Random r, byte[] in, int flips) {
        byte[] out = in.clone();
        if (out.length == 0) {
            return out;
        }
        for (int i = 0; i < flips; i++) {
            int at = r.nextInt(out.length);
            out[at] ^= (byte) (1 << r.nextInt(8));
        }
        return out;
    }

    static byte[] splice(byte[] in, int at, byte[] insert, int delete) {
        ByteArrayOutputStream o = new ByteArrayOutputStream(in.length + insert.length);
        o.write(in, 0, at);
        o.write(insert, 0, insert.length);
        o.write(in, at + delete, in.length - at - delete);
        return o.toByteArray();
    }
}
