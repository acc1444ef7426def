package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.IngressAuditEvent;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.Route;
import dev.previewtunnel.mux.relay.StalledStreams;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayDeque;

/**
 * One absolute-form request and its response, created fresh for each ({@code GET http://localhost:5173/x} is sent
 * in origin form, hop-by-hop and {@code Proxy-*} headers removed): the request body read from the browser only
 * while the upstream is writable, the response read from the upstream only while the browser is writable, the
 * parts of one upstream read flushed together, a bodyless idempotent request the target dropped on a kept stream
 * sent once more. All of it on the browser's event loop, which is the upstream's.
 */
final class ProxyExchange implements Upstream.Listener {
    private static final String TARGET_CLOSED = "the connection to the target closed before it answered";
    private static final String STREAM_LOST = "the tunnel stream to the target was reset, or its tunnel connection "
            + "lost, before the target answered";
    private static final Logger log = LoggerFactory.getLogger(ProxyExchange.class);

    /** What the connection does when an exchange is over. */
    interface Owner {
        /** The response is complete and the connection stays: {@code kept} (or null) serves the next request. */
        void finished(Upstream kept);

        /** A 101 is on its way to the browser: the connection becomes the returned relay. */
        RelaySwitch switching();

        /** The exchange closed, or is closing, the browser connection. */
        void closed();
    }

    private enum Phase { OPENING, FORWARDING, SWITCHING, DONE }

    /** How far the answer got: nothing yet, interim (1xx) or broken parts only, a final head passed on. */
    private enum Answer { AWAITED, INTERIM, STARTED }

    private final IngressContext context;
    private final Channel browser;
    private final Owner owner;
    private final BrowserSession session;
    private final StreamOpener opener;
    private final HttpRequest request;
    private final boolean html;
    private final boolean upgradeRequested;
    private Phase phase = Phase.OPENING;
    private Answer answer = Answer.AWAITED;
    private Upstream upstream;
    private RelaySwitch relay;
    /** Body parts that arrived while the stream was opening. */
    private final ArrayDeque<HttpContent> pendingBody = new ArrayDeque<>();
    private boolean requestDone;
    private long bodyBytes;
    private boolean closeAfterResponse;
    private boolean upstreamKeepAlive;
    /** Running on a stream kept from an earlier exchange (which the target may have closed meanwhile). */
    private boolean retryable;
    /** Response parts written to the browser since the last flush, waiting for the end of the upstream's read. */
    private int unflushed;
    /**
     * The upstream is marked stalled ({@link StalledStreams}) because the browser is full. Kept here so that the
     * mark changes only when this does, not at every upstream read (a pipeline lookup and a map update each).
     */
    private boolean upstreamStalled;

    ProxyExchange(IngressContext context, Channel browser, Owner owner, BrowserSession session, Route route,
                  HttpRequest request, String originForm, boolean html) {
        this.context = context;
        this.browser = browser;
        this.owner = owner;
        this.session = session;
        this.opener = new StreamOpener(context, browser, session, route, "http");
        this.html = html;
        this.request = request;
        this.closeAfterResponse = !HttpUtil.isKeepAlive(request);
        this.upgradeRequested = request.headers().contains(HttpHeaderNames.UPGRADE)
                && request.headers().containsValue(HttpHeaderNames.CONNECTION, HttpHeaderValues.UPGRADE, true);
        request.setUri(originForm);
        HopByHopHeaders.strip(request.headers(), true);
        if (!request.headers().contains(HttpHeaderNames.HOST)) {
            request.headers().set(HttpHeaderNames.HOST, route.requested().toString());
        }
    }

    /** Sends the request on {@code kept} when that can carry it (closing it otherwise), else on a fresh stream. */
    void start(Upstream kept) {
        if (kept != null && kept.reusableFor(opener.route())) {
            retryable = true;
            forwardOn(kept);
            kept.channel.write(request); // flushed at the end of the browser's read, with the body's first parts
            kept.channel.read();
            return;
        }
        if (kept != null) {
            kept.channel.close();
        }
        open();
    }

    boolean requestDone() {
        return requestDone;
    }

    /** The browser half-closed: finish this exchange, then close. */
    void closeAfterResponse() {
        closeAfterResponse = true;
    }

    private void open() {
        phase = Phase.OPENING;
        opener.open(() -> phase == Phase.OPENING, outcome -> {
            if (outcome instanceof StreamOpener.Opened o) {
                onOpened(o.stream());
            } else if (outcome instanceof StreamOpener.Refused r) {
                refuse(r.refusal());
            } else {
                end();
                browser.close(); // the session closed: as closing it does to its other connections
                owner.closed();
            }
        });
    }

    private void onOpened(Channel stream) {
        forwardOn(new Upstream(stream, opener.route(), browser));
        stream.write(request);
        HttpContent part;
        while ((part = pendingBody.poll()) != null) {
            stream.write(part);
        }
        stream.flush();
        stream.read(); // the response head
        readBrowserBodyIfUpstreamWritable();
    }

    private void forwardOn(Upstream up) {
        upstream = up;
        up.listen(this);
        phase = Phase.FORWARDING;
    }

    // ---------------------------------------------------------------- the request, from the browser

    /** A request part the browser's decoder produced for this exchange; owns {@code msg}. */
    void onBrowserPart(Object msg) {
        if (!(msg instanceof HttpContent content) || requestDone || phase == Phase.DONE) {
            ReferenceCountUtil.release(msg);
        } else if (!RequestFraming.bodyIntact(content)) {
            // A chunk size that overflows, a chunk not ended by CRLF, a bad trailer: the decoder stops there. What
            // was sent on is cut off with the stream, so the target never sees the body end as if complete.
            content.release();
            refuse(Refusal.of(TunnelError.BAD_REQUEST, opener.route().requested().toString(),
                    "malformed request body framing", "bad_body"));
        } else {
            requestDone = content instanceof LastHttpContent;
            bodyBytes += content.content().readableBytes();
            if (phase == Phase.FORWARDING) {
                upstream.channel.write(content);
            } else if (phase == Phase.OPENING) {
                pendingBody.add(content);
            } else {
                content.release();
            }
        }
    }

    /** The end of a browser read: what it gave goes out together, and more is read while the upstream takes it. */
    void onBrowserReadComplete() {
        if (phase == Phase.FORWARDING) {
            upstream.channel.flush();
            readBrowserBodyIfUpstreamWritable();
        }
    }

    /** Same loop, so the upstream's writability already counts this turn's writes (performance finding 15). */
    private void readBrowserBodyIfUpstreamWritable() {
        if (phase == Phase.FORWARDING && !requestDone && upstream.channel.isWritable()) {
            browser.read();
        }
    }

    @Override
    public void onWritable() {
        readBrowserBodyIfUpstreamWritable();
    }

    // ---------------------------------------------------------------- the response, to the browser

    @Override
    public void onResponsePart(Object msg) {
        if (phase == Phase.SWITCHING && msg instanceof ByteBuf raw) {
            relay.fromTarget(raw); // raw bytes that followed the 101
            return;
        }
        if (phase != Phase.FORWARDING || !browser.isActive()) {
            ReferenceCountUtil.release(msg);
            return;
        }
        if (answer == Answer.AWAITED) {
            answer = Answer.INTERIM;
        }
        if (msg instanceof HttpObject part && part.decoderResult().isFailure()) {
            // A head the target broke off (its FIN mid-headers) or that exceeds the limits, or a bad chunk: never
            // passed on as if it were a response.
            ReferenceCountUtil.release(msg);
            upstreamEndedEarly("the target's response was malformed or incomplete");
            return;
        }
        if (msg instanceof HttpResponse response && response.status().code() == 101 && upgradeRequested) {
            switchToRelay(response);
            return;
        }
        if (msg instanceof HttpResponse response && response.status().code() >= 200) {
            onFinalHead(response);
        }
        browser.write(msg);
        unflushed++;
        if (!(msg instanceof LastHttpContent)) {
            // Flushed, and the next read asked for, once the upstream's read has handed over all it decoded
            // (onReadComplete): a small response's head and body then leave in one write, not two.
            return;
        }
        flushResponse();
        if (answer == Answer.STARTED) {
            finish();
        } else {
            readUpstreamIfBrowserWritable(); // the end of an interim (1xx) response: the final one follows
        }
    }

    private void onFinalHead(HttpResponse response) {
        int code = response.status().code();
        answer = Answer.STARTED;
        RedirectAudit.check(context.audit(), session, opener.route(), response);
        upstreamKeepAlive = HttpUtil.isKeepAlive(response);
        HopByHopHeaders.strip(response.headers(), false);
        boolean delimited = HttpUtil.isContentLengthSet(response) || HttpUtil.isTransferEncodingChunked(response)
                || code == 204 || code == 304 || HttpMethod.HEAD.equals(request.method());
        if (!delimited) {
            // The body ends when the target closes: the browser can only learn that from a close too.
            closeAfterResponse = true;
        }
        if (closeAfterResponse) {
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
    }

    private void switchToRelay(HttpResponse response) {
        answer = Answer.STARTED;
        HopByHopHeaders.strip(response.headers(), true);
        phase = Phase.SWITCHING;
        relay = owner.switching();
        relay.answerThenComplete(response, upstream.channel, upstream::detachHttp);
    }

    @Override
    public void onReadComplete() {
        if (phase == Phase.FORWARDING && unflushed > 0) {
            flushResponse();
            readUpstreamIfBrowserWritable();
        }
    }

    /** The browser turned writable: the response is read on. */
    void onBrowserWritable() {
        readUpstreamIfBrowserWritable();
    }

    private void readUpstreamIfBrowserWritable() {
        if (phase != Phase.FORWARDING) {
            return;
        }
        // Unread, the stream's DATA frames wait in its queue: while the browser is full they are copied, counted and
        // bounded as a stalled relay's are (StalledStreams; docs/security.md, hostile peers, item 11). A reset then
        // leaves them to be read: an answer that arrived whole before it still reaches the browser whole.
        boolean browserWritable = browser.isWritable();
        if (upstreamStalled == browserWritable) {
            upstreamStalled = !browserWritable;
            StalledStreams.mark(upstream.channel, upstreamStalled, StalledStreams.OnReset.DRAIN);
        }
        if (browserWritable) {
            upstream.channel.read();
        }
    }

    private void flushResponse() {
        if (unflushed > 0) {
            unflushed = 0;
            browser.flush();
        }
    }

    private void finish() {
        Upstream up = end();
        if (!upstreamKeepAlive || closeAfterResponse || !requestDone) {
            up.channel.close();
            up = null;
        }
        if (closeAfterResponse || !requestDone) {
            // A response that ended before its request body did cannot be followed on this connection.
            browser.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            owner.closed();
            return;
        }
        owner.finished(up);
    }

    // ---------------------------------------------------------------- early ends

    @Override
    public void onInputEnded() {
        if (phase == Phase.FORWARDING) {
            upstreamEndedEarly(TARGET_CLOSED); // closes it; or the browser would wait for ever
        }
    }

    @Override
    public void onClosed(Throwable cause) {
        if (phase == Phase.FORWARDING) {
            // The reset's own text is the protocol's, not words for a page: it stays in the debug log.
            log.debug("stream to {} ended early: {}", opener.route().requested(), cause == null ? null
                    : cause.toString());
            upstreamEndedEarly(cause instanceof TunnelStreamException ? STREAM_LOST : TARGET_CLOSED);
        }
    }

    /** The upstream ended while a response was due or under way (a complete one ended the exchange before). */
    private void upstreamEndedEarly(String detail) {
        closeUpstream(end());
        if (mayRetryOnFreshStream()) {
            retryOnFreshStream(detail);
        } else {
            refuse(Refusal.of(TunnelError.STREAM_RESET, opener.route().requested().toString(), detail,
                    "upstream_closed"));
        }
    }

    /**
     * A kept stream can be closed by the target just as the next request goes out on it (keep-alive's race): the
     * request then ends with no answer at all. As browsers do on their own reused connections, it is sent once more
     * on a fresh stream, but only when that cannot repeat an effect: a GET, HEAD or OPTIONS without a body, and
     * no part of an answer decoded (RFC 9110, section 9.2.2). Also after a reset or a lost tunnel connection.
     */
    private boolean mayRetryOnFreshStream() {
        HttpMethod method = request.method();
        return retryable && answer == Answer.AWAITED && requestDone && bodyBytes == 0
                && (HttpMethod.GET.equals(method) || HttpMethod.HEAD.equals(method)
                || HttpMethod.OPTIONS.equals(method));
    }

    private void retryOnFreshStream(String why) {
        context.audit().event(IngressAuditEvent.REQUEST_RETRIED)
                .put("session", session.id())
                .put("authority", opener.route().requested().toString())
                .put("reason", why)
                .write();
        retryable = false; // the fresh stream is not retried in turn: once only
        // The request's end went to the old stream: the new stream's encoder must see it too.
        pendingBody.add(LastHttpContent.EMPTY_LAST_CONTENT);
        open();
    }

    private void refuse(Refusal refusal) {
        closeUpstream(end());
        refusal.send(browser, context, session, html, answer == Answer.STARTED);
        owner.closed();
    }

    /** The browser connection is gone (or failed): nothing more is sent either way. */
    void abandon() {
        closeUpstream(end());
    }

    /** Marks the exchange over and detaches it from its upstream, which it returns (null when none). */
    private Upstream end() {
        phase = Phase.DONE;
        HttpContent c;
        while ((c = pendingBody.poll()) != null) {
            c.release();
        }
        Upstream up = upstream;
        if (up != null) {
            up.listen(null);
            if (upstreamStalled) {
                StalledStreams.mark(up.channel, false); // kept, it is read while idle; closed, the mark goes anyway
            }
        }
        upstreamStalled = false; // a retry's fresh stream starts unmarked
        upstream = null;
        return up;
    }

    private static void closeUpstream(Upstream up) {
        if (up != null) {
            up.channel.close();
        }
    }
}
