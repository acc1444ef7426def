package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.ingress.refresh.GrantRefresher;
import dev.previewtunnel.ingress.session.AuthorityMap;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.EgressPolicy;
import dev.previewtunnel.ingress.session.Route;
import dev.previewtunnel.mux.local.FatalErrors;
import dev.previewtunnel.local.net.ConnectionBudget;
import dev.previewtunnel.mux.relay.RelayHandler;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayDeque;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * One browser connection to the ingress: the HTTP/1.1 forward-proxy side (Netty's HTTP codec decodes, this
 * decides).
 *
 * <p>For every request head, in order, before anything is opened: a request-target in origin form ("a page
 * fetched the ingress port directly") is refused with 400; a missing or wrong {@code Proxy-Authorization}
 * gets 407; an authority the session has no grant for gets 403. Then:
 * <ul>
 *   <li>{@code CONNECT host:port} opens one tunnel stream and, after {@code 200 Connection established},
 *       the connection becomes a raw byte relay (WebSockets, HTTPS passthrough);</li>
 *   <li>an absolute-form request ({@code GET http://localhost:5173/x}) is sent in origin form, hop-by-hop and
 *       {@code Proxy-*} headers removed, over a stream to its target, which is kept for the next request to
 *       the same authority; a {@code 101 Switching Protocols} answer turns that stream raw as well.</li>
 * </ul>
 *
 * <p>Everything here runs on the browser channel's event loop; messages from a tunnel stream (another loop) are
 * handed over with {@code execute}. Both sides read on demand, so a slow browser stops the stream, which stops
 * the gateway, which stops the target.
 */
final class ProxyConnectionHandler extends ChannelInboundHandlerAdapter {
    static final String NAME = "proxy";
    static final String HTTP_CODEC = "http";
    private static final String REALM = "Basic realm=\"preview-tunnel\", charset=\"UTF-8\"";
    private static final String TARGET_CLOSED = "the connection to the target closed before it answered";

    private enum State { AWAIT_HEAD, OPENING, FORWARDING, SWITCHING, CLOSED }

    private final IngressContext context;
    private Channel browser;
    private State state = State.AWAIT_HEAD;

    // The exchange in progress (absolute-form requests).
    private BrowserSession session;
    private HttpRequest request;
    private Route route;
    private boolean html;
    private boolean requestDone;
    private boolean responseStarted;
    private boolean informational;
    private boolean closeAfterResponse;
    private boolean upstreamKeepAlive;
    private boolean upgradeRequested;
    private boolean refreshTried;
    /** The exchange runs on a stream kept from an earlier one (which the target may have closed meanwhile). */
    private boolean upstreamReused;
    private boolean requestHasBody;
    private boolean upstreamAnswered;
    /** An exchange was completed on this connection, which is now a reused keep-alive connection. */
    private boolean reusedConnection;
    private boolean waitingForUpstreamWritable;
    private boolean waitingForBrowserWritable;
    /** Response parts written to the browser since the last flush, waiting for the end of the upstream's read. */
    private boolean responseUnflushed;
    private final ArrayDeque<HttpContent> pendingBody = new ArrayDeque<>();
    private final ArrayDeque<ByteBuf> earlyRawToBrowser = new ArrayDeque<>();
    /** During OPENING for CONNECT: bytes the client sent after the head, before the 200 (one read at most). */
    private final ArrayDeque<ByteBuf> earlyRawToTarget = new ArrayDeque<>();
    private final PipelinedRequests pipelined = new PipelinedRequests();
    /** During SWITCHING: where bytes left in the browser-side HTTP decoder must go. */
    private Channel pendingRawTarget;

    /** The stream of the last absolute-form request, kept for the next request to the same authority. */
    private Upstream upstream;
    private ScheduledFuture<?> headDeadline;

    ProxyConnectionHandler(IngressContext context) {
        this.context = context;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        browser = ctx.channel();
        armHeadDeadline();
        ctx.read();
        ctx.fireChannelActive();
    }

    /**
     * A request head must arrive within the timeout of the previous exchange's end: bounds a client that drips
     * its headers (slowloris) and closes idle keep-alive connections. Not re-armed by partial reads.
     */
    private void armHeadDeadline() {
        cancelHeadDeadline();
        long millis = context.config().requestHeadTimeout().toMillis();
        headDeadline = browser.eventLoop().schedule(() -> {
            if (state == State.AWAIT_HEAD) {
                state = State.CLOSED;
                browser.close();
            }
        }, millis, TimeUnit.MILLISECONDS);
    }

    private void cancelHeadDeadline() {
        if (headDeadline != null) {
            headDeadline.cancel(false);
            headDeadline = null;
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        switch (state) {
            case AWAIT_HEAD -> {
                if (msg instanceof HttpRequest req) {
                    onRequestHead(req);
                }
                ReferenceCountUtil.release(msg);
            }
            case OPENING -> {
                if (pipelined.offer(msg, request != null, requestDone)) {
                    return; // the next request's: answered after this one
                } else if (msg instanceof HttpContent content && !RequestFraming.bodyIntact(content)) {
                    content.release();
                    refuseBrokenBody();
                } else if (msg instanceof HttpContent content) {
                    requestDone |= content instanceof LastHttpContent;
                    requestHasBody |= content.content().isReadable();
                    pendingBody.add(content);
                } else if (msg instanceof ByteBuf raw && request == null) {
                    earlyRawToTarget.add(raw); // sent right after the CONNECT head: the tunnel's first bytes
                } else {
                    ReferenceCountUtil.release(msg);
                }
            }
            case FORWARDING -> {
                if (pipelined.offer(msg, true, requestDone)) {
                    return;
                } else if (msg instanceof HttpContent content && !requestDone && !RequestFraming.bodyIntact(content)) {
                    content.release();
                    refuseBrokenBody();
                } else if (msg instanceof HttpContent content && !requestDone) {
                    requestDone = content instanceof LastHttpContent;
                    requestHasBody |= content.content().isReadable();
                    upstream.channel.write(content);
                } else {
                    ReferenceCountUtil.release(msg);
                }
            }
            case SWITCHING -> {
                // Bytes the HTTP decoder still held when it was removed belong to the raw stream.
                if (msg instanceof ByteBuf buf && pendingRawTarget != null) {
                    pendingRawTarget.write(buf);
                } else {
                    ReferenceCountUtil.release(msg);
                }
            }
            default -> ReferenceCountUtil.release(msg);
        }
    }

    /**
     * A chunk size that overflows, a chunk not ended by CRLF, a bad trailer: the decoder stops there. What was sent
     * on is cut off with the stream (refuse closes it), so the target never sees the body end as if complete.
     */
    private void refuseBrokenBody() {
        refuse(TunnelError.BAD_REQUEST, route.requested().toString(), "malformed request body framing",
                "bad_body");
    }

    /**
     * Hands the next pipelined request back, in order, up to its end (the rest waits for its exchange), then does
     * what the end of a read does: a head still incomplete reads on, a forwarded body is flushed.
     */
    private void replayPipelined(ChannelHandlerContext ctx) {
        pipelined.replay(() -> state == State.AWAIT_HEAD || (request != null && !requestDone
                && (state == State.OPENING || state == State.FORWARDING)), part -> channelRead(ctx, part));
        if (state == State.AWAIT_HEAD || state == State.FORWARDING) {
            channelReadComplete(ctx);
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        switch (state) {
            case AWAIT_HEAD -> ctx.read(); // the head is not complete yet
            case FORWARDING -> {
                upstream.channel.flush();
                readBrowserBodyIfUpstreamWritable();
            }
            default -> {
                // OPENING: wait for the stream; SWITCHING/CLOSED: the relay or nobody reads.
            }
        }
    }

    // ---------------------------------------------------------------- request heads

    private void onRequestHead(HttpRequest req) {
        cancelHeadDeadline();
        refreshTried = false;
        responseStarted = false; // a refusal of this request must not see the last exchange's response
        responseUnflushed = false;
        request = null;
        html = wantsHtml(req);
        String framing = RequestFraming.headProblem(req);
        if (framing != null) {
            refuse(TunnelError.BAD_REQUEST, "request", framing, "bad_request");
            return;
        }
        String uri = req.uri();
        boolean connect = HttpMethod.CONNECT.equals(req.method());
        if (!connect && (uri.startsWith("/") || "*".equals(uri))) {
            if (reusedConnection) {
                // On a connection that already carried a proxied exchange: a client that took this pooled
                // connection for a tunnel (the JDK's WebSocket client does). Closed unanswered, as an idle
                // keep-alive connection may be: such a client then retries on a fresh connection (RFC 9112,
                // section 9.3.1).
                state = State.CLOSED;
                auditRefused(null, null, ErrorPages.NOT_A_PROXY_REQUEST, "origin_form_on_reused_connection");
                browser.close();
                return;
            }
            // A page (or any local client) talking to the ingress port as if it were a web server. Nothing
            // is dialed and no credential is asked for.
            sendAndClose(ErrorPages.page(browser.alloc(),
                    ErrorPages.INGRESS_CODES.get(ErrorPages.NOT_A_PROXY_REQUEST), ErrorPages.NOT_A_PROXY_REQUEST,
                    "This port is a preview-tunnel proxy",
                    "Configure it as the browser's HTTP proxy; direct requests are refused.", html),
                    ErrorPages.NOT_A_PROXY_REQUEST, null, null);
            return;
        }
        session = context.sessions().authenticate(req.headers().get(HttpHeaderNames.PROXY_AUTHORIZATION)).orElse(null);
        if (session == null) {
            FullHttpResponse challenge = ErrorPages.page(browser.alloc(),
                    ErrorPages.INGRESS_CODES.get(ErrorPages.PROXY_AUTH_REQUIRED), ErrorPages.PROXY_AUTH_REQUIRED,
                    "Proxy authentication required",
                    "This browser session has no valid preview-tunnel credential.", html);
            challenge.headers().set(HttpHeaderNames.PROXY_AUTHENTICATE, REALM);
            sendAndClose(challenge, ErrorPages.PROXY_AUTH_REQUIRED, null, null);
            return;
        }
        ConnectionBudget.trust(browser); // authenticated: off the unauthenticated cap and deadline
        Authority requested;
        String originForm = null;
        try {
            if (connect) {
                requested = RequestTarget.connect(uri);
            } else {
                RequestTarget.Absolute target = RequestTarget.absolute(uri);
                requested = target.authority();
                originForm = target.originForm();
            }
        } catch (RequestTarget.UnsupportedException e) {
            refuse(TunnelError.BAD_REQUEST, e.safeTarget(),
                    "only http:// absolute-form requests and CONNECT are proxied", "unsupported_scheme");
            return;
        } catch (IllegalArgumentException e) {
            refuse(TunnelError.BAD_REQUEST, "request", "the request target is not a valid authority or URL",
                    "bad_target");
            return;
        }
        java.util.List<String> hosts = req.headers().getAll(HttpHeaderNames.HOST);
        if (!hosts.isEmpty() && !RequestTarget.hostMatches(hosts, requested, connect ? requested.port() : 80)) {
            // Two Host fields, or one that disagrees with the request line: one of them is lying (request
            // smuggling, rebinding). RFC 9112 section 3.2 makes both a 400.
            refuse(TunnelError.BAD_REQUEST, requested.toString(),
                    "the Host header does not match the request target", "host_mismatch");
            return;
        }
        route = session.authorities().route(requested).orElse(null);
        if (route == null && session.egress() == EgressPolicy.DIRECT
                && !session.authorities().isVirtualHost(requested.host())) {
            // No grant, but the session may reach public hosts directly (checked again after resolving).
            route = new Route(requested, requested, null, null);
        }
        if (route == null) {
            refuse(TunnelError.NOT_GRANTED, requested.toString(),
                    "Ask for a grant for this authority, or open one of the granted previews.", "not_granted");
            return;
        }
        if (connect) {
            closeUpstream(); // a stream kept from an earlier request: this connection becomes a relay
            state = State.OPENING;
            RequestFraming.stopDecoding(browser.pipeline().get(HTTP_CODEC));
            openStream().addListener(f -> browser.eventLoop().execute(() -> onConnectStream(f)));
            return;
        }
        startExchange(req, originForm);
    }

    private void startExchange(HttpRequest req, String originForm) {
        closeAfterResponse = !HttpUtil.isKeepAlive(req);
        upgradeRequested = req.headers().contains(HttpHeaderNames.UPGRADE)
                && req.headers().containsValue(HttpHeaderNames.CONNECTION, HttpHeaderValues.UPGRADE, true);
        req.setUri(originForm);
        HopByHopHeaders.strip(req.headers(), true);
        if (!req.headers().contains(HttpHeaderNames.HOST)) {
            req.headers().set(HttpHeaderNames.HOST, route.requested().toString());
        }
        request = req;
        requestDone = false;
        requestHasBody = false;
        responseStarted = false;
        upstreamAnswered = false;
        informational = false;
        upstreamReused = upstream != null && upstream.reusableFor(route);
        if (upstreamReused) {
            state = State.FORWARDING;
            upstream.channel.write(req);
            upstream.channel.read();
            return;
        }
        closeUpstream();
        state = State.OPENING;
        openStream().addListener(f -> browser.eventLoop().execute(() -> onHttpStream(f)));
    }

    /** A tunnel stream for the route, or for direct egress a socket straight to the public host. */
    private Future<? extends Channel> openStream() {
        if (route.grant() == null) {
            return context.directDialer().dial(browser.eventLoop(), route.target());
        }
        return context.pool(route).openStream(route.target(), route.grant(), context.config().openTimeout(),
                browser.eventLoop());
    }

    // ---------------------------------------------------------------- CONNECT

    /**
     * The stream (or direct socket) an open produced, counted against the session, or null when the open failed
     * (the browser got the error page) or the browser stopped waiting (the stream is closed again).
     */
    private Channel opened(Future<?> f, String kind) {
        if (!f.isSuccess()) {
            failOpen(f.cause());
            return null;
        }
        Channel stream = (Channel) f.getNow();
        // Every stream the tunnel opened is accounted for, once, from here on: the record owns its two lines.
        StreamRecord record = StreamRecord.open(context.audit(), session, route, kind, browser, stream);
        if (state != State.OPENING || !browser.isActive()) {
            record.end("browser_closed", stream);
            return null;
        }
        if (!session.track(browser, route)) {
            // Detached or closed while the open was in flight: the detach could not see this connection yet, so
            // the stream ends here instead of outliving it.
            record.end(session.isClosed() ? BrowserSession.SESSION_CLOSED : BrowserSession.GRANT_DETACHED, stream);
            if (session.isClosed()) {
                state = State.CLOSED;
                releasePending();
                browser.close(); // as closing the session does to its other connections
            } else {
                refuse(TunnelError.NOT_GRANTED, route.requested().toString(),
                        "The grant for this authority was detached from this browser session.", "grant_detached");
            }
            return null;
        }
        return stream;
    }

    private void onConnectStream(Future<?> f) {
        Channel stream = opened(f, "connect");
        if (stream == null) {
            return;
        }
        FullHttpResponse established = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                new HttpResponseStatus(200, "Connection established"), Unpooled.EMPTY_BUFFER);
        state = State.SWITCHING;
        browser.writeAndFlush(established).addListener(w -> {
            if (!w.isSuccess()) {
                stream.close();
                return;
            }
            becomeRelay(stream, "connect");
        });
    }

    /** Removes the HTTP codec and this handler and links the browser socket to the stream byte for byte. */
    private void becomeRelay(Channel stream, String kind) {
        pendingRawTarget = stream;
        ByteBuf first;
        while ((first = earlyRawToTarget.poll()) != null) {
            stream.write(first);
        }
        if (browser.pipeline().get(HTTP_CODEC) != null) {
            browser.pipeline().remove(HTTP_CODEC); // leftover bytes arrive in channelRead (SWITCHING)
        }
        stream.flush();
        ByteBuf early;
        while ((early = earlyRawToBrowser.poll()) != null) {
            browser.write(early);
        }
        browser.flush();
        pipelined.releaseAll(); // decoded as HTTP after a CONNECT or an upgrade: not this relay's bytes
        browser.pipeline().remove(this);
        RelayHandler.link(browser, stream, null); // the stream's StreamRecord writes its stream_closed
    }

    // ---------------------------------------------------------------- absolute-form exchanges

    private void onHttpStream(Future<?> f) {
        Channel stream = opened(f, "http");
        if (stream == null) {
            return;
        }
        upstream = new Upstream(stream, route, this, browser);
        state = State.FORWARDING;
        stream.write(request);
        HttpContent part;
        while ((part = pendingBody.poll()) != null) {
            stream.write(part);
        }
        stream.flush();
        stream.read(); // the response head
        readBrowserBodyIfUpstreamWritable();
    }

    private void readBrowserBodyIfUpstreamWritable() {
        if (requestDone || state != State.FORWARDING) {
            return;
        }
        if (upstream.channel.isWritable()) {
            waitingForUpstreamWritable = false;
            browser.read();
        } else {
            waitingForUpstreamWritable = true;
        }
    }

    /** Upstream (tunnel loop) turned writable; runs on the browser loop. */
    void onUpstreamWritable(Upstream up) {
        if (up == upstream && waitingForUpstreamWritable) {
            readBrowserBodyIfUpstreamWritable();
        }
    }

    /** A decoded response part from the upstream stream; runs on the browser loop. */
    void onUpstreamMessage(Upstream up, Object msg) {
        if (up != upstream || state == State.CLOSED || !browser.isActive()) {
            if (state == State.SWITCHING && msg instanceof ByteBuf raw && browser.isActive()) {
                // Raw bytes that followed a 101 in the same frame: they go out once the HTTP codec is gone.
                if (browser.pipeline().get(HTTP_CODEC) != null) {
                    earlyRawToBrowser.add(raw);
                } else {
                    browser.writeAndFlush(raw);
                }
                return;
            }
            ReferenceCountUtil.release(msg);
            return;
        }
        if (state != State.FORWARDING) {
            // Nothing was asked: a target speaking out of turn (a 408 before it closes an idle connection). Its
            // stream cannot be trusted with the next request.
            ReferenceCountUtil.release(msg);
            closeUpstream();
            return;
        }
        upstreamAnswered = true;
        if (msg instanceof HttpObject part && part.decoderResult().isFailure()) {
            // A head the target broke off (its FIN mid-headers) or that exceeds the limits, or a bad chunk: never
            // passed on as if it were a response.
            ReferenceCountUtil.release(msg);
            upstreamEndedEarly("the target's response was malformed or incomplete");
            return;
        }
        if (msg instanceof HttpResponse response) {
            int code = response.status().code();
            if (code == 101 && upgradeRequested) {
                responseStarted = true;
                HopByHopHeaders.strip(response.headers(), true);
                state = State.SWITCHING;
                Upstream switching = upstream;
                upstream = null;
                browser.writeAndFlush(response).addListener(w -> {
                    if (!w.isSuccess()) {
                        switching.channel.close();
                        return;
                    }
                    switching.channel.eventLoop().execute(() -> {
                        switching.detachHttp();
                        browser.eventLoop().execute(() -> becomeRelay(switching.channel, "upgrade"));
                    });
                });
                return;
            }
            if (code >= 100 && code < 200) {
                informational = true;
            } else {
                responseStarted = true;
                auditRedirect(response);
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
        }
        browser.write(msg);
        responseUnflushed = true;
        if (!(msg instanceof LastHttpContent)) {
            // Flushed, and the next read asked for, once the upstream's read has handed over all it decoded
            // (onUpstreamReadComplete): a small response's head and body then leave in one write, not two.
            return;
        }
        flushResponse();
        if (informational) {
            informational = false;
            readUpstreamIfBrowserWritable();
        } else {
            finishExchange();
        }
    }

    /** The upstream finished a read whose parts were all handed over before this; runs on the browser loop. */
    void onUpstreamReadComplete(Upstream up) {
        if (up != upstream || !responseUnflushed || state == State.CLOSED) {
            return;
        }
        flushResponse();
        readUpstreamIfBrowserWritable();
    }

    /**
     * An absolute redirect to an authority this session has no grant for is passed to the browser unchanged
     * (it will be refused, or go direct by policy) and recorded. Only scheme and authority are logged: the
     * path and query of an OAuth callback can carry codes.
     */
    private void auditRedirect(HttpResponse response) {
        int code = response.status().code();
        String location = response.headers().get(HttpHeaderNames.LOCATION);
        if (code < 300 || code >= 400 || location == null) {
            return;
        }
        try {
            URI to = new URI(location);
            if (!to.isAbsolute() || to.getHost() == null) {
                return; // relative: stays on the granted authority
            }
            String host = to.getHost().startsWith("[") ? to.getHost().substring(1, to.getHost().length() - 1)
                    : to.getHost();
            int port = to.getPort() != -1 ? to.getPort() : "https".equalsIgnoreCase(to.getScheme()) ? 443 : 80;
            Authority target = new Authority(host, port);
            if (session.authorities().route(target).isEmpty()) {
                context.audit().event("redirect_not_granted")
                        .put("session", session.id())
                        .put("from", route.requested().toString())
                        .put("to", to.getScheme() + "://" + target)
                        .put("status", code)
                        .put("policy", session.egress().name().toLowerCase(java.util.Locale.ROOT))
                        .write();
            }
        } catch (URISyntaxException | IllegalArgumentException e) {
            // Not a URL we can judge; the browser will handle it.
        }
    }

    private void readUpstreamIfBrowserWritable() {
        if (upstream == null) {
            return;
        }
        if (browser.isWritable()) {
            waitingForBrowserWritable = false;
            upstream.channel.read();
        } else {
            waitingForBrowserWritable = true;
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (browser.isWritable() && waitingForBrowserWritable) {
            readUpstreamIfBrowserWritable();
        }
        ctx.fireChannelWritabilityChanged();
    }

    private void finishExchange() {
        if (!upstreamKeepAlive) {
            closeUpstream();
        }
        if (closeAfterResponse || !requestDone) {
            // A response that ended before its request body did cannot be followed on this connection.
            state = State.CLOSED;
            closeUpstream();
            browser.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            return;
        }
        state = State.AWAIT_HEAD;
        request = null;
        reusedConnection = true;
        if (upstream != null) {
            // Kept for the next request: read it while idle so that the target closing it (Node does after five
            // idle seconds) is seen now, not when the next request has been sent on it.
            upstream.channel.read();
        }
        armHeadDeadline();
        if (pipelined.isEmpty()) {
            browser.read();
        } else {
            replayPipelined(browser.pipeline().context(this));
        }
    }

    /** The upstream's tunnel connection is draining; an idle upstream is let go now. Browser loop. */
    void onUpstreamDraining(Upstream up) {
        if (up == upstream && state == State.AWAIT_HEAD) {
            closeUpstream();
        }
    }

    /** The upstream stream ended (reset, gateway lost, target closed); runs on the browser loop. */
    void onUpstreamClosed(Upstream up, Throwable cause) {
        if (up != upstream) {
            return;
        }
        upstream = null;
        if (state == State.FORWARDING) {
            upstreamEndedEarly(cause instanceof TunnelStreamException t ? t.getMessage() : TARGET_CLOSED);
        }
    }

    /**
     * The target ended its side of the upstream (its FIN, as END_STREAM through the tunnel); runs on the browser
     * loop after every response part the upstream decoded. A complete response has ended the exchange by then.
     */
    void onUpstreamInputEnded(Upstream up) {
        if (up != upstream) {
            return;
        }
        if (state == State.FORWARDING) {
            upstreamEndedEarly(TARGET_CLOSED); // closes it; or the browser would wait for ever
        } else {
            // Idle (AWAIT_HEAD): its other half would otherwise stay open for good; the next request opens a
            // fresh stream.
            closeUpstream();
        }
    }

    /** The upstream ended while a response was due or under way (a complete one ended the exchange before). */
    private void upstreamEndedEarly(String detail) {
        closeUpstream();
        if (mayRetryOnFreshStream()) {
            retryOnFreshStream(detail);
            return;
        }
        if (!responseStarted) {
            refuse(TunnelError.STREAM_RESET, route.requested().toString(), detail, "upstream_closed");
        } else {
            // Cut short: HTTP/1.1 can only tell the browser by closing the connection.
            state = State.CLOSED;
            closeAfterWrites();
        }
    }

    /** Closes the browser connection once what was written to it (an unflushed response part too) is sent. */
    private void closeAfterWrites() {
        responseUnflushed = false;
        browser.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
    }

    private void flushResponse() {
        if (responseUnflushed) {
            responseUnflushed = false;
            browser.flush();
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
        return upstreamReused && !upstreamAnswered && requestDone && !requestHasBody
                && (HttpMethod.GET.equals(method) || HttpMethod.HEAD.equals(method)
                || HttpMethod.OPTIONS.equals(method));
    }

    private void retryOnFreshStream(String why) {
        context.audit().event("request_retried")
                .put("session", session.id())
                .put("authority", route.requested().toString())
                .put("reason", why)
                .write();
        upstreamReused = false; // the fresh stream is not retried in turn: once only
        // The request's end went to the old stream: the new stream's encoder must see it too.
        pendingBody.add(LastHttpContent.EMPTY_LAST_CONTENT);
        state = State.OPENING;
        openStream().addListener(f -> browser.eventLoop().execute(() -> onHttpStream(f)));
    }

    // ---------------------------------------------------------------- failures and shutdown

    private void failOpen(Throwable cause) {
        if (state != State.OPENING) {
            return;
        }
        if (cause instanceof TunnelStreamException t && tryRefresh(t.error())) {
            return;
        }
        if (cause instanceof TunnelStreamException t) {
            String readable = "direct_not_public".equals(t.detail())
                    ? "Direct egress never reaches this desktop's own loopback, link-local, private or multicast "
                    + "addresses; ask for a grant if this is a preview." : t.detail();
            refuse(t.error(), route.requested().toString(), readable, t.detail());
        } else {
            refuse(TunnelError.GATEWAY_UNREACHABLE, route.requested().toString(), cause.getMessage(), "open_failed");
        }
    }

    /**
     * For an expired or revoked grant, asks the configured refresher (once per request) for a new grant for the
     * same target, attaches it and opens again. Returns false when there is nothing to try.
     */
    private boolean tryRefresh(TunnelError error) {
        GrantRefresher refresher = context.refresher().get();
        if (refreshTried || refresher == null || route.grant() == null
                || (error != TunnelError.GRANT_EXPIRED && error != TunnelError.GRANT_REVOKED)) {
            return false;
        }
        refreshTried = true;
        Route old = route;
        BrowserSession s = session;
        AuthorityMap.Entry oldEntry = s.authorities().entries().stream()
                .filter(e -> e.grantId().equals(old.grantId())).findFirst().orElse(null);
        String name = oldEntry == null ? null : oldEntry.name();
        String environment = oldEntry == null ? null : oldEntry.view().environment();
        refresher.refresh(s.id(), old.target().toString(), old.grantId(), error).whenComplete((grant, failure) ->
                browser.eventLoop().execute(() -> {
                    if (state != State.OPENING || !browser.isActive()) {
                        return;
                    }
                    Route fresh = null;
                    if (failure == null) {
                        try {
                            // Judged before it is attached: a grant for another target or environment is not
                            // what was asked for, and attaching it could replace an unrelated entry. Nor is one
                            // for a grant detached while the hook ran: refreshing must not undo a detach.
                            // Replaced atomically against a detach on the control API's thread. When another
                            // request's refresh got there first, its grant serves this request too.
                            UnverifiedGrantView view = UnverifiedGrantView.decode(grant);
                            if (new Authority(view.targetHost(), view.targetPort()).equals(old.target())
                                    && view.environment().equals(environment) && !view.jti().equals(old.grantId())
                                    && s.authorities().replace(old.grantId(), grant, name).isPresent()) {
                                fresh = s.authorities().route(old.requested()).orElse(null);
                            }
                        } catch (IllegalArgumentException notAGrant) {
                            fresh = null;
                        }
                    }
                    context.audit().event("grant_refresh").put("session", s.id())
                            .put("authority", old.requested().toString()).put("oldGrant", old.grantId())
                            .put("newGrant", fresh == null ? null : fresh.grantId())
                            .put("ok", fresh == null ? "false" : "true").write();
                    if (fresh == null) {
                        refuse(error, old.requested().toString(), "the grant could not be refreshed",
                                error.code());
                        return;
                    }
                    route = fresh;
                    boolean connect = request == null;
                    openStream().addListener(f -> browser.eventLoop().execute(
                            () -> { if (connect) { onConnectStream(f); } else { onHttpStream(f); } }));
                }));
        return true;
    }

    private void refuse(TunnelError error, String authority, String detail, String reason) {
        sendAndClose(ErrorPages.forError(browser.alloc(), error, authority, detail, html), error.code(), authority,
                reason);
    }

    private void sendAndClose(FullHttpResponse response, String code, String authority, String reason) {
        state = State.CLOSED;
        releasePending();
        closeUpstream();
        auditRefused(session == null ? null : session.id(), authority, code, reason);
        if (responseStarted) {
            // Too late for an error page: the browser learns from the connection ending after what it was sent.
            response.release();
            closeAfterWrites();
        } else {
            browser.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
        }
    }

    private void auditRefused(String sessionId, String authority, String code, String reason) {
        if (sessionId == null) {
            // Any local process can be refused at will without a credential: one line per kind, repeats summarized.
            context.audit().refused("request_refused", l -> l.put("authority", authority), "code", code,
                    "detail", reason == null ? "" : reason);
            return;
        }
        context.audit().event("request_refused")
                .put("session", sessionId)
                .put("authority", authority)
                .put("code", code)
                .put("detail", reason)
                .write();
    }

    private void closeUpstream() {
        if (upstream != null) {
            Upstream up = upstream;
            upstream = null;
            up.channel.close();
        }
    }

    private void releasePending() {
        HttpContent c;
        while ((c = pendingBody.poll()) != null) {
            c.release();
        }
        ByteBuf b;
        while ((b = earlyRawToBrowser.poll()) != null) {
            b.release();
        }
        while ((b = earlyRawToTarget.poll()) != null) {
            b.release();
        }
        pipelined.releaseAll();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        if (evt instanceof ChannelInputShutdownEvent) {
            // The browser half-closed in HTTP mode: finish the exchange in progress, then close.
            closeAfterResponse = true;
            if (state == State.AWAIT_HEAD) {
                state = State.CLOSED;
                ctx.close();
            }
            return;
        }
        super.userEventTriggered(ctx, evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        cancelHeadDeadline();
        state = State.CLOSED;
        releasePending();
        closeUpstream();
        if (pendingRawTarget != null) {
            pendingRawTarget.close(); // the browser left while we were switching to a relay
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        FatalErrors.check(cause); // an Error means the process, not this connection, is broken
        state = State.CLOSED;
        ctx.close(); // first: the upstream's record then sees the browser gone (why = browser_closed)
        closeUpstream();
    }

    /** Scheme and host[:port] of a request-target, for logs: never its user-info, path or query. */
    static String schemeAndHost(URI target) {
        String scheme = target.getScheme() == null ? "" : target.getScheme() + ":";
        if (target.getHost() == null) {
            return scheme.isEmpty() ? "request" : scheme;
        }
        return scheme + "//" + target.getHost() + (target.getPort() == -1 ? "" : ":" + target.getPort());
    }

    private static boolean wantsHtml(HttpRequest req) {
        String accept = req.headers().get(HttpHeaderNames.ACCEPT);
        return accept != null && accept.contains("text/html");
    }
}
