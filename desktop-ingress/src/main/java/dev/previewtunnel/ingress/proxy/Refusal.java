package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.IngressAuditEvent;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.status.FrontDoor;
import dev.previewtunnel.ingress.status.RecentErrors;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.local.audit.AuditLog;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;

import java.time.Instant;

/**
 * A request the ingress does not carry, and all a refusal does: the page the browser gets ({@link ErrorPages}
 * builds every one), the {@code request_refused} audit line, and the close. The one place refusals are built,
 * whether the {@link RequestGate} refused a head or an open or exchange failed later.
 *
 * @param error  the tunnel error, or null for the ingress's own codes ({@link ErrorPages#INGRESS_CODES})
 * @param detail what happened, in the ingress's own words (shown on the page): never a cause's exception text; null
 *               for the error's generic words ({@link ErrorWords})
 * @param reason the audit's detail: a fixed word, never a secret
 */
record Refusal(TunnelError error, String code, String authority, String detail, String reason) {
    private static final String REALM = "Basic realm=\"preview-tunnel\", charset=\"UTF-8\"";
    /** Closed unanswered (no page): see {@link #originFormOnReusedConnection}. */
    private static final String UNANSWERED = "unanswered";

    static Refusal of(TunnelError error, String authority, String detail, String reason) {
        return new Refusal(error, error.code(), authority, detail, reason);
    }

    /** A page (or any local client) talking to the ingress port as if it were a web server. */
    static Refusal notAProxyRequest() {
        return new Refusal(null, ErrorPages.NOT_A_PROXY_REQUEST, null,
                "Configure it as the browser's HTTP proxy; direct requests are refused.", null);
    }

    /** No, or a wrong, session credential: answered with the {@code Proxy-Authenticate} challenge. */
    static Refusal proxyAuthRequired() {
        return new Refusal(null, ErrorPages.PROXY_AUTH_REQUIRED, null,
                "This browser session has no valid preview-tunnel credential.", null);
    }

    /**
     * Origin form on a connection that already carried a proxied exchange: a client that took this pooled connection
     * for a tunnel (the JDK's WebSocket client does). Closed unanswered, as an idle keep-alive connection may be:
     * such a client then retries on a fresh connection (RFC 9112, section 9.3.1).
     */
    static Refusal originFormOnReusedConnection() {
        return new Refusal(null, ErrorPages.NOT_A_PROXY_REQUEST, null, UNANSWERED,
                "origin_form_on_reused_connection");
    }

    /** A request body stopped arriving, or dripped, for the body idle timeout ({@link RequestBodyDeadline}). */
    static Refusal requestBodyTimeout() {
        return new Refusal(null, ErrorPages.REQUEST_BODY_TIMEOUT, null,
                "The request body stopped arriving, so the request was cut.", null);
    }

    /** The page for this refusal under plain {@code run}, or null when the connection is closed unanswered. */
    FullHttpResponse page(ByteBufAllocator alloc, boolean html) {
        return page(alloc, html, null, null, false);
    }

    /**
     * The page, its fix from {@code frontDoor} when that has one for this error, else the generic fix naming
     * {@code sessionId}; {@code refresher}: a grant refresher is set, so a renewal may come (as with a front door).
     */
    FullHttpResponse page(ByteBufAllocator alloc, boolean html, FrontDoor frontDoor, String sessionId,
                          boolean refresher) {
        if (error != null) {
            String fix = frontDoor == null ? null : frontDoor.fix(error, authority);
            return ErrorPages.forError(alloc, error, authority, detail,
                    fix != null ? fix : ErrorWords.fix(error, authority, sessionId), refresher || frontDoor != null,
                    html);
        }
        if (UNANSWERED.equals(detail)) {
            return null;
        }
        String title = switch (code) {
            case ErrorPages.PROXY_AUTH_REQUIRED -> "Proxy authentication required";
            case ErrorPages.REQUEST_BODY_TIMEOUT -> "Request body too slow";
            default -> "This port is a preview-tunnel proxy";
        };
        FullHttpResponse page = ErrorPages.page(alloc, ErrorPages.INGRESS_CODES.get(code), code, title, detail, html);
        if (ErrorPages.PROXY_AUTH_REQUIRED.equals(code)) {
            page.headers().set(HttpHeaderNames.PROXY_AUTHENTICATE, REALM);
        }
        return page;
    }

    /**
     * Audits, records it among the session's recent errors (for its status page), then answers with the page and
     * closes. Once a response has started it is too late for a page: the browser learns from the connection ending
     * after what it was sent.
     */
    void send(Channel browser, IngressContext context, BrowserSession session, boolean html,
              boolean responseStarted) {
        String sessionId = session == null ? null : session.id();
        audit(context.audit(), sessionId);
        if (sessionId != null && error != null) {
            context.recentErrors().record(sessionId, new RecentErrors.Entry(Instant.now(), authority, code,
                    detail == null || detail.isBlank() ? ErrorWords.happened(error) : detail));
        }
        boolean refresher = context.refresher().get() != null;
        FullHttpResponse page = responseStarted ? null
                : page(browser.alloc(), html, context.frontDoor().get(), sessionId, refresher);
        if (page != null) {
            browser.writeAndFlush(page).addListener(ChannelFutureListener.CLOSE);
        } else if (responseStarted) {
            browser.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
        } else {
            browser.close();
        }
    }

    private void audit(AuditLog audit, String sessionId) {
        if (sessionId == null) {
            // Any local process can be refused at will without a credential: one line per kind, repeats summarized.
            audit.refused(IngressAuditEvent.REQUEST_REFUSED, l -> l.put("authority", authority), "code", code,
                    "detail", reason == null ? "" : reason);
            return;
        }
        audit.event(IngressAuditEvent.REQUEST_REFUSED)
                .put("session", sessionId)
                .put("authority", authority)
                .put("code", code)
                .put("detail", reason)
                .write();
    }
}
