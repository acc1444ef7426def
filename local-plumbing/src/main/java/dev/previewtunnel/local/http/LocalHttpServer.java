package dev.previewtunnel.local.http;

import dev.previewtunnel.local.net.ConnectionBudget;
import dev.previewtunnel.mux.local.FatalErrors;
import dev.previewtunnel.mux.wire.SettingRange;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * The one loopback HTTP server behind every local endpoint: the ingress's control API, the gateway's admin API
 * ({@link LocalApi}) and both programs' metrics ({@link MetricsEndpoint}); each is a {@link Handler} bound here.
 *
 * <p>What no local client can do to the others: every phase of a connection (waiting for a whole request, head and
 * body; producing and writing its answer) has the same deadline, so half a request head holds a connection at most
 * {@link Limits#requestTimeout}; bodies are capped; connections are capped ({@link ConnectionBudget}: over three
 * quarters of the cap, a new connection closes the oldest one that has not completed a request yet); a
 * connection has one request in flight at a time (later pipelined ones wait, a few at most); and answers are
 * produced by a {@link Handler} that returns a future, so a slow one (a metrics scrape) runs off the event loop.
 */
public final class LocalHttpServer {
    /** Pipelined requests a connection may queue behind the one being answered; more close it. */
    static final int MAX_QUEUED = 4;

    private LocalHttpServer() {
    }

    /**
     * @param requestTimeout  each phase of a connection (a whole request arriving, its answer produced and written,
     *                        the next request after it) must end within this
     * @param maxConnections  concurrent connections; more are closed at accept, and of them at most three quarters
     *                        that have not completed a request (the oldest is closed for a new one)
     * @param maxBody         largest request body (413 beyond)
     */
    public record Limits(Duration requestTimeout, int maxConnections, int maxBody) {
        public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(5);
        public static final int DEFAULT_MAX_CONNECTIONS = 64;
        /**
         * The ranges an operator may set (the flags of both programs check them): a deadline short enough to free
         * a squatted slot soon, a connection cap a loopback tool never needs more of. Not enforced here, so that
         * tests can bind tighter deadlines.
         */
        public static final SettingRange<Duration> REQUEST_TIMEOUT =
                new SettingRange<>("requestTimeout", Duration.ofSeconds(1), Duration.ofMinutes(10));
        public static final SettingRange<Integer> MAX_CONNECTIONS = new SettingRange<>("maxConnections", 1, 10_000);

        public static Limits defaults() {
            return new Limits(DEFAULT_REQUEST_TIMEOUT, DEFAULT_MAX_CONNECTIONS, 64 * 1024);
        }

        public Limits withRequestTimeout(Duration timeout) {
            return new Limits(timeout, maxConnections, maxBody);
        }

        public Limits withMaxConnections(int max) {
            return new Limits(requestTimeout, max, maxBody);
        }
    }

    /** One request, copied off the wire (no reference counting for handlers). */
    public record Request(String method, String path, HttpHeaders headers, byte[] body) {
        public boolean hasBody() {
            return body.length > 0;
        }
    }

    /** One answer. {@code headers} are added as given; Content-Length and Cache-Control: no-store are set here. */
    public record Reply(int status, String contentType, byte[] body, Map<String, String> headers) {
        public static Reply text(int status, String body) {
            return new Reply(status, "text/plain; charset=utf-8", body.getBytes(StandardCharsets.UTF_8), Map.of());
        }
    }

    /**
     * Produces the answer to one request. Called on the connection's event loop: it must not block there; slow work
     * completes the future from another thread (the answer is written back on the event loop).
     */
    @FunctionalInterface
    public interface Handler {
        CompletionStage<Reply> handle(Request request);
    }

    /** Binds {@code handler} on {@code listen}, which must be a loopback address. */
    public static Channel bind(EventLoopGroup group, Class<? extends ServerSocketChannel> type,
                               InetSocketAddress listen, Limits limits, String name, Handler handler)
            throws InterruptedException {
        if (listen.getAddress() == null || !listen.getAddress().isLoopbackAddress()) {
            throw new IllegalArgumentException("a local endpoint must listen on a loopback address");
        }
        int total = ConnectionBudget.clipToFdLimit(name + " connections", limits.maxConnections(),
                ConnectionBudget.fdLimit());
        // A connection is trusted once it has sent a whole request. Untrusted ones (half a head, nothing yet) may
        // hold three quarters of the cap; a new one over that closes the oldest of them, so squatters cannot lock
        // an honest client out, and clients that did complete requests keep the last quarter.
        ConnectionBudget budget = new ConnectionBudget(name, total, Math.max(1, total * 3 / 4), null);
        return new ServerBootstrap().group(group).channel(type)
                .handler(budget.acceptOrder()) // "oldest" is accept order, whichever loop admits first
                // Read on demand: the next request is read only once the previous one is answered.
                .childOption(ChannelOption.AUTO_READ, false)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel c) {
                        if (!budget.admit(c)) {
                            return;
                        }
                        c.pipeline().addLast(new HttpServerCodec(4096, 8192, 8192))
                                .addLast(new HttpObjectAggregator(limits.maxBody()))
                                .addLast(new Exchange(handler, limits.requestTimeout().toMillis()));
                    }
                }).bind(listen).sync().channel();
    }

    /**
     * One connection's exchanges, in order, one at a time. Invariant: exactly one deadline is armed while the
     * connection is open, covering the current phase; its expiry closes the connection.
     */
    private static final class Exchange extends ChannelInboundHandlerAdapter {
        private final Handler handler;
        private final long timeoutMillis;
        private final ArrayDeque<FullHttpRequest> queued = new ArrayDeque<>();
        private ScheduledFuture<?> deadline;
        private boolean answering;
        private boolean closed;

        Exchange(Handler handler, long timeoutMillis) {
            this.handler = handler;
            this.timeoutMillis = timeoutMillis;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            arm(ctx);
            ctx.read();
            ctx.fireChannelActive();
        }

        private void arm(ChannelHandlerContext ctx) {
            if (deadline != null) {
                deadline.cancel(false);
            }
            deadline = ctx.executor().schedule(() -> {
                ctx.close();
            }, timeoutMillis, TimeUnit.MILLISECONDS);
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (!(msg instanceof FullHttpRequest req)) {
                ReferenceCountUtil.release(msg);
                return;
            }
            if (closed || queued.size() >= MAX_QUEUED) {
                req.release();
                ctx.close();
                return;
            }
            ConnectionBudget.trust(ctx.channel()); // a whole request arrived in time
            queued.add(req);
            if (!answering) {
                answerNext(ctx);
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (!answering && !closed) {
                ctx.read(); // the request is not complete yet
            }
            ctx.fireChannelReadComplete();
        }

        private void answerNext(ChannelHandlerContext ctx) {
            FullHttpRequest req = queued.poll();
            if (req == null) {
                arm(ctx); // waiting for the next request
                ConnectionBudget.untrust(ctx.channel()); // idle: evictable like a silent newcomer
                ctx.read();
                return;
            }
            answering = true;
            arm(ctx); // producing and writing this answer
            boolean keepAlive = HttpUtil.isKeepAlive(req) && req.decoderResult().isSuccess();
            boolean head = HttpMethod.HEAD.equals(req.method());
            Request request = null; // a malformed head or URI: answered 400 here, never seen by a handler
            try {
                if (req.decoderResult().isSuccess()) {
                    byte[] body = new byte[req.content().readableBytes()];
                    req.content().readBytes(body);
                    request = new Request(req.method().name(), new QueryStringDecoder(req.uri()).path(),
                            req.headers(), body);
                }
            } catch (RuntimeException e) {
                request = null;
            } finally {
                req.release();
            }
            CompletionStage<Reply> answer;
            if (request == null) {
                answer = CompletableFuture.completedFuture(Reply.text(400, "malformed request\n"));
            } else {
                try {
                    answer = handler.handle(request);
                } catch (RuntimeException e) {
                    answer = CompletableFuture.failedFuture(e);
                }
            }
            answer.whenComplete((reply, failure) -> {
                if (ctx.executor().inEventLoop()) {
                    write(ctx, reply, failure, keepAlive, head);
                } else {
                    ctx.executor().execute(() -> write(ctx, reply, failure, keepAlive, head));
                }
            });
        }

        private void write(ChannelHandlerContext ctx, Reply reply, Throwable failure, boolean keepAlive,
                           boolean head) {
            if (closed) {
                return;
            }
            if (failure != null || reply == null) {
                reply = Reply.text(500, "internal error\n");
            }
            FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                    HttpResponseStatus.valueOf(reply.status()),
                    head ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(reply.body()));
            reply.headers().forEach(r.headers()::set);
            r.headers().set(HttpHeaderNames.CONTENT_TYPE, reply.contentType())
                    .set(HttpHeaderNames.CONTENT_LENGTH, reply.body().length)
                    .set(HttpHeaderNames.CACHE_CONTROL, "no-store");
            boolean keep = keepAlive && reply.status() < 400;
            if (!keep) {
                r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
                return;
            }
            ctx.writeAndFlush(r).addListener((ChannelFutureListener) f -> {
                if (!f.isSuccess()) {
                    ctx.close();
                    return;
                }
                answering = false;
                answerNext(ctx);
            });
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            closed = true;
            if (deadline != null) {
                deadline.cancel(false);
            }
            FullHttpRequest q;
            while ((q = queued.poll()) != null) {
                q.release();
            }
            ctx.fireChannelInactive();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            FatalErrors.check(cause); // an Error means the process, not this connection, is broken
            ctx.close();
        }
    }
}
