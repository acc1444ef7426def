package dev.previewtunnel.ingress.fuzz;

import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.ingress.Ingress;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.fuzz.ProxyFuzzCases.Case;
import dev.previewtunnel.ingress.proxy.DirectDialer;
import dev.previewtunnel.ingress.proxy.IngressContext;
import dev.previewtunnel.ingress.proxy.IngressFuzzAccess;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.SessionRegistry;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.local.audit.AuditLog;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.testing.FuzzRunner;
import dev.previewtunnel.testing.LoggedSecrets;
import dev.previewtunnel.testing.LoggedWarnings;
import dev.previewtunnel.testing.NettyLeakGuard;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.DefaultChannelId;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.local.LocalServerChannel;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseDecoder;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;


import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Property/fuzz test of the ingress's network input (issue 3): random and mutated proxy request heads.
 *
 * <p><b>In process</b> ({@code fuzz.ingress.cases}, default 100,000): each case is one browser connection with
 * exactly the pipeline {@code ProxyServer} builds ({@code half-close}, {@code HttpServerCodec} with its limits,
 * {@code ProxyConnectionHandler}) on an {@link EmbeddedChannel} that reads on demand, as the real socket does (auto-read
 * off). The {@link IngressContext}'s {@link TunnelPool} points at a closed port and has no connection, so nothing can
 * be dialed and a request that passes the credential and grant checks must get its 502 {@code gateway_unreachable}
 * at once. Properties:
 * <ul>
 *   <li>no exception escapes the pipeline, nothing is logged as a warning or error;</li>
 *   <li>every answer is a well-formed HTTP response (parsed with Netty's {@link HttpResponseDecoder}) with a status
 *       in {400, 403, 407, 431, 502, 504} and a {@code ptun-error} header, 407 with a {@code Proxy-Authenticate}
 *       challenge; there is at most one, and the connection is closed after it;</li>
 *   <li>a well-formed request gets exactly the status and code it is owed (order: framing 400, origin form 400,
 *       credential 407, target 400, Host mismatch 400, not granted 403, granted 502); a head the HTTP decoder must
 *       reject gets 400; so do the RFC 9112 framing shapes of {@code ProxyFuzzCases.framing} (two Host fields,
 *       Content-Length with Transfer-Encoding, a broken chunk...), and pipelined requests get the first one's
 *       answer, then the close; other spellings of loopback ({@code 127.evil.example}, {@code 127.1}) never map
 *       to a grant (403, where a mapping would show as 502);</li>
 *   <li>a connection that never completes a head is closed by the head deadline (or at once on the client's FIN);
 *   </li>
 *   <li>no credential (the proxy passwords, the Basic values as sent, decoded ones) appears in any answer or in any
 *       audit line;</li>
 *   <li>no buffer leaks (Netty's detector at PARANOID).</li>
 * </ul>
 *
 * <p><b>Real sockets</b> ({@code fuzz.ingress.socketCases}, default 300): a running {@link Ingress} (gateway URL
 * on a closed port) receives the same hostile inputs over real sockets, interleaved with a valid client that must
 * keep getting its answer promptly: after every case a 403 for an authority its session lacks, after every tenth
 * (and the last) the 502 of its granted one; every hostile connection must end.
 *
 * <p>Deterministic: {@code -Dfuzz.seed=S} (printed), {@code -Dfuzz.case=N} re-runs one in-process case verbosely.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ProxyInputFuzzTest {
    static final FuzzRunner.Settings RUN = FuzzRunner.Settings.fromProperties("ingress", 0x5EED_1A6EL);
    static final long SEED = RUN.seed();
    static final int CASES = RUN.cases();
    static final int SOCKET_CASES = RUN.socketCases();
    static final Set<Integer> ALLOWED = Set.of(400, 403, 407, 431, 502, 504);
    static final String ENV = "fuzz-env";

    static Path keysDir;
    static GrantIssuer issuer;
    static SessionRegistry sessions;
    static BrowserSession s1;
    static BrowserSession s2;
    static IngressConfig config;
    static EventLoopGroup idleGroup;
    static ProxyFuzzCases.Material material;
    static final long STARTED = System.nanoTime();

    static final Map<String, LongAdder> OUTCOMES = new ConcurrentHashMap<>();
    static final AtomicLong inProcessCases = new AtomicLong();
    static final AtomicLong refused = new AtomicLong();
    static final AtomicLong accepted = new AtomicLong();
    static final AtomicLong socketCases = new AtomicLong();
    static final AtomicLong socketValid = new AtomicLong();
    static final AtomicLong auditLines = new AtomicLong();

    @BeforeAll
    static void setUp() throws Exception {
        System.out.println("[fuzz] ingress seed=" + SEED + " (override with -Dfuzz.seed), cases=" + CASES
                + ", socketCases=" + SOCKET_CASES + ", threads=" + RUN.threads());
        keysDir = Files.createTempDirectory("ptun-fuzz-ingress");
        Files.delete(keysDir);
        KeyDirectory keys = KeyDirectory.init(keysDir);
        issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        sessions = new SessionRegistry();
        s1 = sessions.add(BrowserSession.create("s1"));
        s2 = sessions.add(BrowserSession.create("s2"));
        s1.authorities().add(issuer.issueGrant(GrantSpec.tcp(ENV, "s1", "localhost", 5173), Duration.ofMinutes(10)));
        s1.authorities().add(issuer.issueGrant(GrantSpec.tcp(ENV, "s1", "127.0.0.1", 8080), Duration.ofMinutes(10)));
        s2.authorities().add(issuer.issueGrant(GrantSpec.tcp(ENV, "s2", "localhost", 9000), Duration.ofMinutes(10)));
        String vhost = s1.authorities().entries().get(0).virtualHost().toString();
        material = new ProxyFuzzCases.Material(s1.username(), s1.password(), s2.username(), s2.password(), vhost);
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort();
        }
        config = IngressConfig.defaults(new InetSocketAddress("127.0.0.1", 0),
                URI.create("ws://127.0.0.1:" + closedPort + MuxProtocol.DEFAULT_PATH));
        idleGroup = Transports.best().newGroup(1, "fuzz-ingress-idle");
    }

    @AfterAll
    static void tearDown() throws IOException {
        long millis = (System.nanoTime() - STARTED) / 1_000_000;
        System.out.println("{\"fuzz\":\"ingress\",\"cases\":" + (inProcessCases.get() + socketCases.get())
                + ",\"closedWithProtocolError\":" + refused.get() + ",\"accepted\":" + accepted.get() + ",\"seed\":"
                + SEED + ",\"millis\":" + millis + "}");
        System.out.println("[fuzz] ingress process CPU " + FuzzRunner.processCpuMillis() + " ms; detail: inProcess="
                + inProcessCases.get() + " " + new TreeMap<>(OUTCOMES) + "; sockets=" + socketCases.get()
                + ", valid answers alongside: " + socketValid.get() + "; audit lines checked: " + auditLines.get());
        if (idleGroup != null) {
            idleGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
        if (keysDir != null && Files.exists(keysDir)) {
            try (var files = Files.walk(keysDir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    /** Credentials no audit line may carry: the proxy passwords, the Basic values, the grants' signatures. */
    static LoggedSecrets auditCheck() {
        List<String> secrets = new ArrayList<>(List.of(s1.password(), s2.password(),
                ProxyFuzzCases.b64(s1.username() + ":" + s1.password()),
                ProxyFuzzCases.b64(s2.username() + ":" + s2.password())));
        for (BrowserSession s : List.of(s1, s2)) {
            s.authorities().entries().forEach(e -> secrets.add(e.grant().substring(e.grant().lastIndexOf('.') + 1)));
        }
        return LoggedSecrets.attach(AuditLog.LOGGER).watch(secrets);
    }

    // ==================================================================== in process

    /**
     * A browser socket that reads only when asked (auto-read off, as ProxyServer configures it): bytes the client
     * sent wait until the pipeline asks for a read, and the client's FIN is seen by a read after its last byte.
     * Reads run inside the channel's own read operation, so a close's follow-up events run after the read
     * returns, as on a real event loop. Its parent is a server channel, as an accepted socket's is.
     */
    static final class Browser extends EmbeddedChannel {
        private final ArrayDeque<byte[]> input = new ArrayDeque<>();
        private boolean fin;
        private boolean finDelivered;
        private boolean readRequested;
        private boolean pumping;
        private boolean testPump;

        Browser(IngressContext context) {
            super(ACCEPTOR, DefaultChannelId.newInstance(), true, false, new ChannelInitializer<Channel>() {
                @Override
                protected void initChannel(Channel ch) {
                    ch.config().setAutoRead(false);
                    IngressFuzzAccess.install(ch, context);
                }
            });
        }

        /** The client sends these bytes (and maybe its FIN); they are read when the pipeline asks. */
        void send(byte[] bytes) {
            input.add(bytes);
            pump();
        }

        void sendFin() {
            fin = true;
            pump();
        }

        private void pump() {
            if (!isOpen()) {
                return;
            }
            testPump = true;
            unsafe().beginRead(); // runs doBeginRead inside the channel's own operation
        }

        @Override
        protected void doBeginRead() {
            if (!testPump) {
                readRequested = true; // the pipeline asked for a read
            }
            testPump = false;
            if (pumping || input == null) {
                return; // input is null while the constructor activates the channel: nothing sent yet
            }
            pumping = true;
            try {
                while (readRequested && isActive()) {
                    byte[] next = input.poll();
                    if (next != null) {
                        readRequested = false;
                        ByteBuf buf = alloc().buffer(next.length);
                        buf.writeBytes(next);
                        pipeline().fireChannelRead(buf);
                        pipeline().fireChannelReadComplete();
                    } else if (fin && !finDelivered) {
                        readRequested = false;
                        finDelivered = true;
                        pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
                    } else {
                        break;
                    }
                }
            } finally {
                pumping = false;
            }
        }

        boolean inputLeft() {
            return !input.isEmpty();
        }
    }

    static final Channel ACCEPTOR = new LocalServerChannel();

    /** One per worker: a context whose pool (never started, closed-port gateway) answers on the caller's thread. */
    static final class Worker implements FuzzRunner.Worker<Case> {
        final ProxyFuzzCases gen = new ProxyFuzzCases(material);
        final IngressContext context;

        Worker() {
            TunnelClient client = new TunnelClient(idleGroup, Transports.best().socketChannel(), MuxSettings.defaults());
            // Never started: an open, asked on the browser's embedded loop (whose inEventLoop() is always true), is
            // answered as unreachable at once, on this thread, like on the ingress's own loop.
            TunnelPool pool = new TunnelPool(client, config.gateway(), () -> "unused", null, 1,
                    config.connectTimeout());
            DirectDialer noDirect = new DirectDialer(NioSocketChannel.class, task -> {
                throw new IllegalStateException("sessions here never use direct egress");
            }, config.connectTimeout());
            context = new IngressContext(config, sessions, pool, new AuditLog("ingress"), noDirect);
        }

        @Override
        public Case generate(long index, long seed) {
            return gen.generate(index, seed);
        }

        @Override
        public void run(Case c, boolean verbose) {
            String outcome = runCase(c, this, verbose);
            if (verbose) {
                System.out.println("[fuzz] outcome " + outcome);
            }
        }

        @Override
        public String describe(Case c) {
            return c + "  wire=" + printable(java.util.Arrays.copyOf(c.wire, Math.min(c.wire.length, 400)));
        }

        @Override
        public void close() {
            // Nothing of its own to free: the pool never connects, its client's loops are the test's.
        }
    }

    @Test
    @Order(1)
    void inProcessProxyConnectionsAnswerEveryHeadAndClose() throws Exception {
        LoggedWarnings warnings = LoggedWarnings.attach();
        LoggedSecrets audit = auditCheck();
        FuzzRunner runner = new FuzzRunner(RUN);
        try {
            if (RUN.replaying()) {
                runner.replay(Worker::new);
                return;
            }
            long t0 = System.nanoTime();
            runner.runAll(Worker::new);
            System.out.println("[fuzz] ingress in process: " + runner.done() + " cases in "
                    + (System.nanoTime() - t0) / 1_000_000 + " ms (process CPU so far " + FuzzRunner.processCpuMillis()
                    + " ms)");
        } finally {
            inProcessCases.addAndGet(runner.done());
            auditLines.addAndGet(audit.lines());
            audit.detach();
            warnings.detach();
        }
        assertTrue(audit.leaks().isEmpty(), "credential in audit lines:\n" + String.join("\n", audit.leaks()));
        assertTrue(warnings.seen().isEmpty(), "warnings/errors logged:\n" + String.join("\n", warnings.seen()));
        List<String> leaks = NettyLeakGuard.collectLeaks();
        assertTrue(leaks.isEmpty(), leaks.size() + " buffer leak(s) in process:\n" + String.join("\n\n", leaks));
    }

    static String printable(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            int v = x & 0xff;
            if (v >= 0x20 && v < 0x7f && v != '\\') {
                s.append((char) v);
            } else if (v == '\r') {
                s.append("\\r");
            } else if (v == '\n') {
                s.append("\\n");
            } else {
                s.append(String.format("\\x%02x", v));
            }
        }
        return s.toString();
    }

    /** One browser connection: send the case, let every deadline pass if needed, check the answer. */
    static String runCase(Case c, Worker w, boolean verbose) {
        Browser ch = new Browser(w.context);
        ch.freezeTime();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            int from = 0;
            for (int k = 0; k <= c.cuts.length; k++) {
                int to = k < c.cuts.length ? c.cuts[k] : c.wire.length;
                if (to > from) {
                    ch.send(java.util.Arrays.copyOfRange(c.wire, from, to));
                    ch.runPendingTasks();
                }
                from = to;
                drain(ch, out);
            }
            if (c.fin) {
                ch.sendFin();
                ch.runPendingTasks();
            }
            drain(ch, out);
            ch.checkException();
            boolean answered = out.size() > 0;
            if (ch.isOpen() && !answered) {
                // Nothing to answer yet: the head is incomplete. The head deadline must end the connection.
                ch.advanceTimeBy(config.requestHeadTimeout().toMillis() + 1000, TimeUnit.MILLISECONDS);
                ch.runScheduledPendingTasks();
                ch.runPendingTasks();
                drain(ch, out);
                ch.checkException();
                if (ch.isOpen()) {
                    throw new AssertionError("half-alive: no answer and still open after the request-head deadline");
                }
            }
            List<Response> responses = parse(out.toByteArray(), c.head);
            if (verbose) {
                System.out.println("[fuzz] open=" + ch.isOpen() + " inputLeft=" + ch.inputLeft() + " responses="
                        + responses + "\n  raw=" + printable(out.toByteArray()));
            }
            String outcome = judge(c, responses, out.toByteArray(), ch);
            OUTCOMES.computeIfAbsent(c.kind + "/" + outcome, k -> new LongAdder()).increment();
            return outcome;
        } finally {
            if (ch.isOpen()) {
                ch.unsafe().close(ch.voidPromise());
            }
            ch.runPendingTasks();
            drain(ch, new ByteArrayOutputStream());
            try {
                ch.finishAndReleaseAll();
            } catch (Throwable ignored) {
                // judged above
            }
        }
    }

    record Response(int status, String code, boolean challenge, int contentLength, int bodyBytes, String head) {
    }

    static String judge(Case c, List<Response> responses, byte[] raw, Browser ch) {
        String text = new String(raw, StandardCharsets.ISO_8859_1);
        for (String secret : c.secrets) {
            if (!secret.isEmpty() && text.contains(secret)) {
                throw new AssertionError("credential echoed in the answer: " + printable(raw));
            }
        }
        if (responses.size() > 1) {
            throw new AssertionError("more than one answer on a connection that must close after its first: "
                    + responses);
        }
        if (responses.isEmpty()) {
            if (c.status != 0) {
                throw new AssertionError("expected " + c.status + " " + c.code + " but got no answer (open="
                        + ch.isOpen() + ")");
            }
            refused.incrementAndGet();
            return "closed-without-answer";
        }
        Response r = responses.get(0);
        if (!ALLOWED.contains(r.status())) {
            throw new AssertionError("status " + r.status() + " not in " + ALLOWED + ": " + r);
        }
        if (r.code() == null || r.code().isEmpty()) {
            throw new AssertionError("error answer without ptun-error: " + r);
        }
        if (r.status() == 407 && !r.challenge()) {
            throw new AssertionError("407 without Proxy-Authenticate: " + r);
        }
        if (r.bodyBytes() != 0 && r.contentLength() != r.bodyBytes()) {
            throw new AssertionError("body length " + r.bodyBytes() + " != Content-Length " + r.contentLength());
        }
        if (ch.isOpen()) {
            throw new AssertionError("connection left open after the error answer " + r);
        }
        if (c.status != 0 && (r.status() != c.status || !c.code.equals(r.code()))) {
            throw new AssertionError("expected " + c.status + " " + c.code + " but got " + r.status() + " "
                    + r.code());
        }
        if (r.status() == 502 && "gateway_unreachable".equals(r.code())) {
            accepted.incrementAndGet(); // passed the credential and grant checks; nothing could be dialed
        } else {
            refused.incrementAndGet();
        }
        return r.status() + " " + r.code();
    }

    /**
     * Parses the ingress's output with Netty's response decoder; malformed output fails the case. An answer to
     * HEAD carries no body, and whether the ingress saw a HEAD (and not a head it could not parse) is its call: when
     * the request may have been HEAD, the parse without a body is tried as well.
     */
    static List<Response> parse(byte[] raw, boolean maybeHead) {
        try {
            return parse0(raw, false);
        } catch (AssertionError withBody) {
            if (!maybeHead) {
                throw withBody;
            }
            return parse0(raw, true);
        }
    }

    static List<Response> parse0(byte[] raw, boolean headRequest) {
        List<Response> responses = new ArrayList<>();
        if (raw.length == 0) {
            return responses;
        }
        EmbeddedChannel decoder = new EmbeddedChannel(new HttpResponseDecoder() {
            @Override
            protected boolean isContentAlwaysEmpty(HttpMessage msg) {
                return headRequest || super.isContentAlwaysEmpty(msg);
            }
        });
        try {
            decoder.writeInbound(Unpooled.wrappedBuffer(raw));
            decoder.finish();
            HttpResponse current = null;
            int body = 0;
            Object o;
            while ((o = decoder.readInbound()) != null) {
                try {
                    if (o instanceof HttpObject h && !h.decoderResult().isSuccess()) {
                        throw new AssertionError("malformed answer (" + h.decoderResult().cause() + "): "
                                + printable(raw));
                    }
                    if (o instanceof HttpResponse resp) {
                        current = resp;
                        body = 0;
                    }
                    if (o instanceof HttpContent content) {
                        body += content.content().readableBytes();
                    }
                    if (o instanceof LastHttpContent) {
                        if (current == null) {
                            throw new AssertionError("content without a response head: " + printable(raw));
                        }
                        String len = current.headers().get(HttpHeaderNames.CONTENT_LENGTH);
                        responses.add(new Response(current.status().code(), current.headers().get("ptun-error"),
                                current.headers().contains(HttpHeaderNames.PROXY_AUTHENTICATE),
                                len == null ? -1 : Integer.parseInt(len), body,
                                current.status() + " " + current.headers().names()));
                        current = null;
                    }
                } finally {
                    ReferenceCountUtil.release(o);
                }
            }
            if (current != null) {
                throw new AssertionError("answer cut short: " + printable(raw));
            }
        } finally {
            decoder.finishAndReleaseAll();
        }
        return responses;
    }

    static void drain(EmbeddedChannel ch, ByteArrayOutputStream out) {
        Object m;
        while ((m = ch.readOutbound()) != null) {
            try {
                if (!(m instanceof ByteBuf b)) {
                    throw new AssertionError("unexpected outbound message " + m.getClass().getName());
                }
                byte[] bytes = new byte[b.readableBytes()];
                b.getBytes(b.readerIndex(), bytes);
                out.write(bytes, 0, bytes.length);
            } finally {
                ReferenceCountUtil.release(m);
            }
        }
    }

    // ==================================================================== real sockets

    @Test
    @Order(2)
    void runningIngressKeepsAnsweringWhileHostileConnectionsComeAndGo() throws Exception {
        LoggedWarnings warnings = LoggedWarnings.attach();
        LoggedSecrets audit = auditCheck();
        Ingress ingress = Ingress.start(config, () -> "no-gateway-token", null);
        ingress.sessions().add(s1);
        ingress.sessions().add(s2);
        List<String> failures = new ArrayList<>();
        try {
            InetSocketAddress proxy = ingress.proxyAddress();
            ProxyFuzzCases gen = new ProxyFuzzCases(material);
            String auth = "Proxy-Authorization: Basic " + ProxyFuzzCases.b64(s1.username() + ":" + s1.password());
            byte[] valid = ("CONNECT localhost:5173 HTTP/1.1\r\nHost: localhost:5173\r\n" + auth + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII);
            byte[] validNotGranted = ("CONNECT localhost:5174 HTTP/1.1\r\nHost: localhost:5174\r\n" + auth
                    + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
            for (int i = 0; i < SOCKET_CASES; i++) {
                long seed = RUN.caseSeed(0x50CE7L, i);
                Case c = gen.generate(i, seed);
                try {
                    hostile(proxy, c);
                } catch (Throwable t) {
                    failures.add(c + " (seed " + seed + "): " + t);
                }
                socketCases.incrementAndGet();
                // Interleaved: a valid client still gets its answer, promptly. After every case one whose session
                // lacks the grant (authenticated, refused at the gate); after every tenth and the last, the granted
                // CONNECT, answered through the pool: with no gateway its attempts are paced 250 ms apart
                // (LoopSlice.DEMAND_INTERVAL), so one after each of 300 cases was 75 s of this test.
                boolean throughPool = i % 10 == 9 || i == SOCKET_CASES - 1;
                long t0 = System.nanoTime();
                String answer = exchange(proxy, throughPool ? valid : validNotGranted, true);
                long ms = (System.nanoTime() - t0) / 1_000_000;
                boolean expected = throughPool
                        ? answer.startsWith("HTTP/1.1 502") && answer.contains("ptun-error: gateway_unreachable")
                        : answer.startsWith("HTTP/1.1 403") && answer.contains("ptun-error: not_granted");
                if (!expected) {
                    failures.add("valid client after socket case " + i + " got: " + answer.lines().findFirst()
                            .orElse(""));
                } else if (ms > 3000) {
                    failures.add("valid client after socket case " + i + " waited " + ms + " ms for its 502");
                } else {
                    socketValid.incrementAndGet();
                }
                if (failures.size() > 10) {
                    break;
                }
            }
        } finally {
            ingress.close();
            auditLines.addAndGet(audit.lines());
            audit.detach();
            warnings.detach();
        }
        assertTrue(failures.isEmpty(), failures.size() + " failure(s):\n" + String.join("\n", failures));
        assertTrue(audit.leaks().isEmpty(), "credential in audit lines:\n" + String.join("\n", audit.leaks()));
        // The pool's own warnings (its connections' reconnects, logged by its tunnel package) are not the proxy's.
        List<String> relevant = warnings.seen().stream()
                .filter(w -> !w.startsWith(TunnelPool.class.getPackageName() + ".")).toList();
        assertTrue(relevant.isEmpty(), "warnings/errors logged:\n" + String.join("\n", relevant));
        List<String> leaks = NettyLeakGuard.collectLeaks();
        assertTrue(leaks.isEmpty(), leaks.size() + " buffer leak(s) with real sockets:\n" + String.join("\n\n", leaks));
    }

    /** One hostile connection: its bytes, then our FIN; the ingress must answer well and close. */
    static void hostile(InetSocketAddress proxy, Case c) throws IOException {
        String answer = exchange(proxy, c.wire, c.status != 0);
        String text = answer;
        for (String secret : c.secrets) {
            if (!secret.isEmpty() && text.contains(secret)) {
                throw new AssertionError("credential echoed: " + printable(text.getBytes(StandardCharsets.ISO_8859_1)));
            }
        }
        if (answer.isEmpty()) {
            if (c.status != 0) {
                throw new AssertionError("no answer, expected " + c.status);
            }
            return;
        }
        List<Response> responses = parse(answer.getBytes(StandardCharsets.ISO_8859_1), c.head);
        if (responses.size() != 1 || !ALLOWED.contains(responses.get(0).status())
                || responses.get(0).code() == null) {
            throw new AssertionError("bad answer " + responses + ": " + printable(answer.getBytes(
                    StandardCharsets.ISO_8859_1)));
        }
        if (c.status != 0 && (responses.get(0).status() != c.status || !c.code.equals(responses.get(0).code()))) {
            throw new AssertionError("expected " + c.status + " " + c.code + ", got " + responses.get(0));
        }
    }

    /**
     * Sends {@code bytes}; when {@code complete}, waits for the ingress to close after answering, otherwise
     * half-closes first. Returns everything the ingress sent; fails if it keeps the connection open.
     */
    static String exchange(InetSocketAddress proxy, byte[] bytes, boolean complete) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(proxy, 5000);
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            try {
                out.write(bytes);
                out.flush();
                if (!complete) {
                    s.shutdownOutput();
                }
            } catch (IOException e) {
                // closed early by the ingress: what matters is that it answered and closed
            }
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            try {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    got.write(buf, 0, n);
                }
            } catch (SocketTimeoutException e) {
                throw new AssertionError("ingress kept the connection open (" + (complete ? "after its answer"
                        : "after our FIN") + "); got: " + printable(got.toByteArray()));
            } catch (IOException e) {
                // reset after the answer: closed
            }
            return got.toString(StandardCharsets.ISO_8859_1);
        }
    }
}
