package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.mux.local.FatalErrors;
import dev.previewtunnel.local.net.ConnectionBudget;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * One browser connection to the ingress: the HTTP/1.1 forward-proxy side (Netty's HTTP codec decodes, this
 * dispatches). Each request head goes through the {@link RequestGate} before anything is opened; then
 * {@code CONNECT host:port} opens one stream and, after {@code 200 Connection established}, the connection becomes
 * a raw byte relay ({@link RelaySwitch}); an absolute-form request runs as a fresh {@link ProxyExchange}, on the
 * stream kept from the last one when that goes to the same target. Pipelined requests wait for their turn
 * ({@link PipelinedRequests}).
 *
 * <p>Everything here runs on the browser channel's event loop, which is its streams' loop too. Both sides read on
 * demand, so a slow browser stops the stream, which stops the gateway, which stops the target.
 */
final class ProxyConnectionHandler extends ChannelInboundHandlerAdapter implements ProxyExchange.Owner {
    private enum State { AWAIT_HEAD, EXCHANGE, CONNECTING, SWITCHING, STATUS, CLOSED }

    private final IngressContext context;
    private final PipelinedRequests pipelined = new PipelinedRequests();
    private Channel browser;
    private State state = State.AWAIT_HEAD;
    /** An exchange was completed on this connection, which is now a reused keep-alive connection. */
    private boolean reusedConnection;
    /** The absolute-form exchange in progress (EXCHANGE, and SWITCHING after its 101). */
    private ProxyExchange exchange;
    /** STATUS: the status page request in progress (answered, then the connection closes). */
    private StatusExchange status;
    /** CONNECTING and SWITCHING: where raw bytes go until the relay takes over. */
    private RelaySwitch relay;
    /** The stream of the last absolute-form exchange, kept for the next request to the same target. */
    private Upstream kept;
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
            case EXCHANGE -> {
                if (!pipelined.offer(msg, true, exchange.requestDone())) {
                    exchange.onBrowserPart(msg);
                } // else the next request's: answered after this one
            }
            case STATUS -> status.onPart(msg);
            case CONNECTING, SWITCHING -> {
                // Sent right after the CONNECT head, or left in the HTTP decoder when it was removed: the relay's.
                if (msg instanceof ByteBuf raw) {
                    relay.fromBrowser(raw);
                } else {
                    ReferenceCountUtil.release(msg);
                }
            }
            default -> ReferenceCountUtil.release(msg);
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        if (state == State.AWAIT_HEAD) {
            ctx.read(); // the head is not complete yet
        } else if (state == State.EXCHANGE) {
            exchange.onBrowserReadComplete();
        } else if (state == State.STATUS && !status.requestDone()) {
            ctx.read(); // the status request's (small, bounded) body
        } // CONNECTING: wait for the stream; SWITCHING/CLOSED: the relay or nobody reads.
    }

    private void onRequestHead(HttpRequest req) {
        cancelHeadDeadline();
        String accept = req.headers().get(HttpHeaderNames.ACCEPT);
        boolean html = accept != null && accept.contains("text/html");
        RequestGate.Decision decision = RequestGate.decide(req, context.sessions(), reusedConnection);
        if (decision.session() != null) {
            ConnectionBudget.trust(browser); // authenticated: off the unauthenticated cap and deadline
        }
        if (decision instanceof RequestGate.Refuse r) {
            closed();
            r.refusal().send(browser, context, r.session(), html, false);
        } else if (decision instanceof RequestGate.Tunnel t) {
            connect(t, html);
        } else if (decision instanceof RequestGate.Status s) {
            closeKept();
            state = State.STATUS;
            status = new StatusExchange(context, browser, s.session(), s.kind(), req);
            if (req instanceof HttpContent whole) {
                status.onPart(whole.retain()); // a head and body in one message: the read above releases its own
            }
        } else if (decision instanceof RequestGate.Forward f) {
            state = State.EXCHANGE;
            exchange = new ProxyExchange(context, browser, this, f.session(), f.route(), req, f.originForm(), html);
            Upstream up = kept;
            kept = null;
            exchange.start(up);
        }
    }

    private void connect(RequestGate.Tunnel tunnel, boolean html) {
        closeKept(); // a stream kept from an earlier request: this connection becomes a relay
        state = State.CONNECTING;
        relay = new RelaySwitch(browser, this, pipelined);
        RequestFraming.stopDecoding(browser.pipeline().get(BrowserPipeline.HTTP_CODEC));
        new StreamOpener(context, browser, tunnel.session(), tunnel.route(), "connect").open(
                () -> state == State.CONNECTING, outcome -> {
                    if (outcome instanceof StreamOpener.Opened o) {
                        established(o.stream());
                        return;
                    }
                    closed();
                    if (outcome instanceof StreamOpener.Refused r) {
                        r.refusal().send(browser, context, tunnel.session(), html, false);
                    } else {
                        browser.close(); // the session closed: as closing it does to its other connections
                    }
                });
    }

    private void established(Channel stream) {
        state = State.SWITCHING;
        relay.answerThenComplete(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                new HttpResponseStatus(200, "Connection established"), Unpooled.EMPTY_BUFFER), stream, () -> { });
    }

    // ---------------------------------------------------------------- ProxyExchange.Owner

    @Override
    public void finished(Upstream keep) {
        state = State.AWAIT_HEAD;
        exchange = null;
        reusedConnection = true;
        kept = keep;
        if (kept != null) {
            // Kept for the next request: read it while idle so that the target closing it (Node does after five
            // idle seconds) is seen now, not when the next request has been sent on it.
            kept.channel.read();
        }
        armHeadDeadline();
        if (pipelined.isEmpty()) {
            browser.read();
            return;
        }
        // The next pipelined request, in order, up to its end (the rest waits for its exchange); then what the end
        // of a read does: a head still incomplete reads on, a forwarded body is flushed.
        ChannelHandlerContext ctx = browser.pipeline().context(this);
        pipelined.replay(() -> state == State.AWAIT_HEAD || (state == State.EXCHANGE && !exchange.requestDone()),
                part -> channelRead(ctx, part));
        if (state == State.AWAIT_HEAD || state == State.EXCHANGE) {
            channelReadComplete(ctx);
        }
    }

    @Override
    public RelaySwitch switching() {
        state = State.SWITCHING;
        relay = new RelaySwitch(browser, this, pipelined);
        return relay;
    }

    @Override
    public void closed() {
        state = State.CLOSED;
        pipelined.releaseAll();
        closeKept();
    }

    // ---------------------------------------------------------------- the browser's side

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (state == State.EXCHANGE && browser.isWritable()) {
            exchange.onBrowserWritable();
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        if (evt instanceof ChannelInputShutdownEvent) {
            // The browser half-closed in HTTP mode: finish the exchange in progress, then close.
            if (state == State.EXCHANGE) {
                exchange.closeAfterResponse();
            } else if (state == State.AWAIT_HEAD) {
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
        goneOrFailed();
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        FatalErrors.check(cause); // an Error means the process, not this connection, is broken
        state = State.CLOSED;
        ctx.close(); // first: the upstream's record then sees the browser gone (why = browser_closed)
        goneOrFailed();
    }

    private void goneOrFailed() {
        state = State.CLOSED;
        pipelined.releaseAll();
        closeKept();
        if (exchange != null) {
            exchange.abandon();
            exchange = null;
        }
        if (relay != null) {
            relay.abandon(); // the browser left while we were switching to a relay
            relay = null;
        }
    }

    private void closeKept() {
        if (kept != null) {
            Upstream up = kept;
            kept = null;
            up.channel.close();
        }
    }
}
