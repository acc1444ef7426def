package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.status.FrontDoor;
import dev.previewtunnel.ingress.status.Html;
import dev.previewtunnel.ingress.status.StatusFacts;
import dev.previewtunnel.ingress.status.StatusPage;
import dev.previewtunnel.mux.wire.Authority;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * One request to the status page's reserved authority {@code preview.localhost:80}, answered by the ingress itself
 * for the session whose credential the {@link RequestGate} checked: {@code GET /} the page ({@link StatusPage}),
 * {@code POST /open} with {@code port=N} asks the {@link FrontDoor} to open a discovered port and redirects to it,
 * anything else 404. The POST must come from the status page itself ({@code Origin: http://preview.localhost}):
 * the proxy credential is attached to every request of this browser, so a dev app's cross-site form would carry it
 * too (CSRF). The body is read on demand, bounded, and the connection closes after the answer.
 */
final class StatusExchange {
    /** What the head asked for. */
    enum Kind {
        PAGE, OPEN, NOT_FOUND;

        static Kind of(HttpMethod method, String originForm) {
            String path = new QueryStringDecoder(originForm).path();
            if (HttpMethod.GET.equals(method) && "/".equals(path)) {
                return PAGE;
            }
            return HttpMethod.POST.equals(method) && "/open".equals(path) ? OPEN : NOT_FOUND;
        }
    }

    static final String ORIGIN = "http://" + ErrorPages.STATUS_HOST;
    /** Bounds the POST body ({@code port=65535} is 10 bytes) and the whole request's arrival. */
    static final int MAX_BODY = 256;
    private static final long FRONT_DOOR_SECONDS = 30;
    private static final long PORTS_MILLIS = 2000;

    private final IngressContext context;
    private final Channel browser;
    private final BrowserSession session;
    private final Kind kind;
    private final String origin;
    private final StringBuilder body = new StringBuilder();
    private final ScheduledFuture<?> deadline;
    private boolean requestDone;
    private boolean tooLarge;

    StatusExchange(IngressContext context, Channel browser, BrowserSession session, Kind kind, HttpRequest head) {
        this.context = context;
        this.browser = browser;
        this.session = session;
        this.kind = kind;
        this.origin = head.headers().get(HttpHeaderNames.ORIGIN);
        long millis = context.config().requestHeadTimeout().toMillis();
        this.deadline = browser.eventLoop().schedule(() -> {
            if (!requestDone) {
                browser.close(); // a body that drips: as a head that drips is
            }
        }, millis, TimeUnit.MILLISECONDS);
    }

    /** Whether the reserved authority is asked for: {@code preview.localhost} (a trailing dot too) on port 80. */
    static boolean isStatusAuthority(Authority a) {
        String host = a.host().toLowerCase(Locale.ROOT);
        return a.port() == 80 && (host.equals(ErrorPages.STATUS_HOST) || host.equals(ErrorPages.STATUS_HOST + "."));
    }

    boolean requestDone() {
        return requestDone;
    }

    /** A part of the request after its head; owns {@code msg}. */
    void onPart(Object msg) {
        try {
            if (requestDone || !(msg instanceof HttpContent content)) {
                return;
            }
            if (!tooLarge) {
                int n = content.content().readableBytes();
                if (body.length() + n > MAX_BODY) {
                    tooLarge = true;
                } else {
                    body.append(content.content().toString(StandardCharsets.US_ASCII));
                }
            }
            if (content instanceof LastHttpContent) {
                requestDone = true;
                deadline.cancel(false);
                answer();
            }
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    private void answer() {
        FrontDoor frontDoor = context.frontDoor().get();
        switch (kind) {
            case PAGE -> page(frontDoor);
            case OPEN -> open(frontDoor);
            default -> send(simple(HttpResponseStatus.NOT_FOUND, "Not found",
                    "The status page is at " + ORIGIN + "/."));
        }
    }

    private void page(FrontDoor frontDoor) {
        CompletableFuture<List<Integer>> ports = frontDoor == null ? CompletableFuture.completedFuture(null)
                : frontDoor.discoveredPorts(session.id()).completeOnTimeout(null, PORTS_MILLIS, TimeUnit.MILLISECONDS)
                .exceptionally(e -> null);
        ports.whenComplete((list, e) -> browser.eventLoop().execute(() -> {
            StatusFacts facts = StatusFacts.collect(session, context.pools(), frontDoor, list,
                    context.recentErrors(), Instant.now());
            send(html(HttpResponseStatus.OK, StatusPage.render(facts)));
        }));
    }

    private void open(FrontDoor frontDoor) {
        if (!ORIGIN.equals(origin)) {
            send(simple(HttpResponseStatus.FORBIDDEN, "Refused",
                    "Ports are opened only from the status page itself (" + ORIGIN + "/)."));
            return;
        }
        int port = tooLarge ? -1 : port(body.toString());
        if (port < 1) {
            send(simple(HttpResponseStatus.BAD_REQUEST, "Bad request", "Expected a form field port=N."));
            return;
        }
        if (frontDoor == null) {
            send(simple(HttpResponseStatus.NOT_FOUND, "Not available",
                    "Ports are opened from here only under desktop-ingress open."));
            return;
        }
        frontDoor.openPort(session.id(), port).orTimeout(FRONT_DOOR_SECONDS, TimeUnit.SECONDS)
                .whenComplete((uri, e) -> browser.eventLoop().execute(() -> {
                    if (e != null || uri == null || !"http".equals(uri.getScheme()) || uri.getUserInfo() != null) {
                        send(simple(HttpResponseStatus.BAD_GATEWAY, "Port " + port + " could not be opened",
                                "The environment did not grant it; the output of desktop-ingress open says why."));
                        return;
                    }
                    send(redirect(uri));
                }));
    }

    /** The {@code port} field of a form body, or -1. */
    static int port(String form) {
        List<String> values = new QueryStringDecoder("?" + form).parameters().get("port");
        if (values == null || values.size() != 1 || !values.get(0).matches("[0-9]{1,5}")) {
            return -1;
        }
        int port = Integer.parseInt(values.get(0));
        return port <= 65535 ? port : -1;
    }

    private void send(FullHttpResponse response) {
        if (!browser.isActive()) {
            response.release();
            return;
        }
        browser.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
    }

    /** Released by whoever sends it. */
    private FullHttpResponse redirect(URI uri) {
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.SEE_OTHER,
                browser.alloc().buffer(0));
        r.headers().set(HttpHeaderNames.LOCATION, uri.toASCIIString()).set(HttpHeaderNames.CONTENT_LENGTH, 0)
                .set(HttpHeaderNames.CACHE_CONTROL, "no-store").set(HttpHeaderNames.CONNECTION,
                        HttpHeaderValues.CLOSE);
        return r;
    }

    private FullHttpResponse simple(HttpResponseStatus status, String title, String words) {
        return html(status, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>" + Html.escape(title)
                + "</title><style>" + StatusPage.STYLE + "</style></head>\n<body><h1>" + Html.escape(title)
                + "</h1>\n<p>" + Html.escape(words) + "</p>\n<p><a href=\"/\">Back to the status page</a></p>"
                + "</body></html>\n");
    }

    private FullHttpResponse html(HttpResponseStatus status, String page) {
        byte[] bytes = page.getBytes(StandardCharsets.UTF_8);
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
                browser.alloc().buffer(bytes.length).writeBytes(bytes));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/html; charset=utf-8")
                .set(HttpHeaderNames.CONTENT_LENGTH, bytes.length)
                .set(HttpHeaderNames.CACHE_CONTROL, "no-store")
                .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE)
                .set("X-Content-Type-Options", "nosniff")
                .set(HttpHeaderNames.CONTENT_SECURITY_POLICY, POLICY);
        return r;
    }

    /** No script at all; only the page's style; never framed (the Open buttons are not to be clickjacked). */
    static final String POLICY = "default-src 'none'; style-src '" + SelfReload.sha256(StatusPage.STYLE)
            + "'; base-uri 'none'; frame-ancestors 'none'";
}
