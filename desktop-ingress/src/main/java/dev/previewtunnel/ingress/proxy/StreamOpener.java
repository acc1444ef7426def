package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.refresh.GrantRefresher;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.Route;
import dev.previewtunnel.ingress.status.FrontDoor;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.netty.channel.Channel;
import io.netty.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * Opens the stream one request runs on: a tunnel stream for a granted route, or for direct egress a socket straight
 * to the public host. An expired or revoked grant is refreshed and the open tried again, once per request
 * ({@link GrantRefresh}). Every stream opened is accounted for from here on ({@link StreamRecord}). The open's future
 * is the caller loop's, so {@code then} runs on the browser's loop.
 */
final class StreamOpener {
    /** What an open came to; nothing at all when the request stopped waiting (the stream, if any, is let go). */
    sealed interface Outcome permits Opened, Refused, SessionClosed {
    }

    /** A stream, counted against the session. */
    record Opened(Channel stream) implements Outcome {
    }

    record Refused(Refusal refusal) implements Outcome {
    }

    /** The session closed while the open was in flight: the browser connection is closed, as closing does. */
    record SessionClosed() implements Outcome {
    }

    private static final Logger log = LoggerFactory.getLogger(StreamOpener.class);

    private final IngressContext context;
    private final Channel browser;
    private final BrowserSession session;
    private final String kind;
    private Route route;
    private boolean refreshTried;

    /** {@code kind}: the stream record's, {@code connect} or {@code http}. */
    StreamOpener(IngressContext context, Channel browser, BrowserSession session, Route route, String kind) {
        this.context = context;
        this.browser = browser;
        this.session = session;
        this.route = route;
        this.kind = kind;
    }

    /** The route: the gate's, or the one a refreshed grant made. */
    Route route() {
        return route;
    }

    void open(BooleanSupplier stillWaiting, Consumer<Outcome> then) {
        Future<? extends Channel> f = route.grant() == null
                ? context.directDialer().dial(browser.eventLoop(), route.target())
                : context.pool(route).openStream(route.target(), route.grant(), context.config().openTimeout(),
                browser.eventLoop());
        if (f.isDone()) {
            // Failed (or dialed) at once, inside the read that brought the head: answered after the rest of that
            // read, as an open that takes a while is, so a broken body in it is judged first.
            browser.eventLoop().execute(() -> settled(f, stillWaiting, then));
        } else {
            f.addListener(done -> settled(done, stillWaiting, then));
        }
    }

    private void settled(Future<?> done, BooleanSupplier stillWaiting, Consumer<Outcome> then) {
        if (done.isSuccess()) {
            opened((Channel) done.getNow(), stillWaiting, then);
        } else if (stillWaiting.getAsBoolean()) {
            failed(done.cause(), stillWaiting, then);
        }
    }

    private void opened(Channel stream, BooleanSupplier stillWaiting, Consumer<Outcome> then) {
        // Every stream the tunnel opened is accounted for, once, from here on: the record owns its two lines.
        StreamRecord record = StreamRecord.open(context.audit(), session, route, kind, browser, stream);
        if (!stillWaiting.getAsBoolean() || !browser.isActive()) {
            record.end("browser_closed", stream);
            return;
        }
        if (!session.track(browser, route)) {
            // Detached or closed while the open was in flight: the detach could not see this connection yet, so
            // the stream ends here instead of outliving it.
            record.end(session.isClosed() ? BrowserSession.SESSION_CLOSED : BrowserSession.GRANT_DETACHED, stream);
            then.accept(session.isClosed() ? new SessionClosed() : new Refused(Refusal.of(TunnelError.NOT_GRANTED,
                    route.requested().toString(),
                    "The grant for this authority was detached from this browser session.", "grant_detached")));
            return;
        }
        then.accept(new Opened(stream));
    }

    private void failed(Throwable cause, BooleanSupplier stillWaiting, Consumer<Outcome> then) {
        GrantRefresher refresher = context.refresher().get();
        if (cause instanceof TunnelStreamException t && !refreshTried && GrantRefresh.applies(refresher, route,
                t.error())) {
            refreshTried = true;
            Route old = route;
            GrantRefresh.refresh(refresher, context.audit(), session, old, t.error(), browser.eventLoop(),
                    () -> stillWaiting.getAsBoolean() && browser.isActive(), fresh -> {
                        if (fresh == null) {
                            then.accept(new Refused(Refusal.of(t.error(), old.requested().toString(),
                                    renewalFailed(old), t.error().code())));
                            return;
                        }
                        route = fresh;
                        open(stillWaiting, then);
                    });
            return;
        }
        if (cause instanceof TunnelStreamException t) {
            then.accept(new Refused(Refusal.of(t.error(), route.requested().toString(), words(t), t.detail())));
        } else {
            // The cause's text (e.g. "finishConnect(..) failed") is for the operator's log, never for the page.
            log.info("opening a stream to {} failed: {}", route.requested(), cause.toString());
            then.accept(new Refused(Refusal.of(TunnelError.GATEWAY_UNREACHABLE, route.requested().toString(),
                    null, "open_failed")));
        }
    }

    /**
     * The page's words for a refused open: the ingress's own (direct egress, a failed renewal), else null for the
     * error's generic words. The gateway's detail and a connect failure's text stay in the audit line.
     */
    private String words(TunnelStreamException t) {
        if ("direct_not_public".equals(t.detail())) {
            return "Direct egress never reaches this desktop's own loopback, link-local, private or multicast "
                    + "addresses; ask for a grant if this is a preview.";
        }
        if (t.error() == TunnelError.GRANT_EXPIRED || t.error() == TunnelError.GRANT_REVOKED) {
            return renewalProblem(route) == null ? null : renewalFailed(route);
        }
        return null;
    }

    /** The front door's word on a failed renewal for this route's target, or null. */
    private String renewalProblem(Route r) {
        FrontDoor frontDoor = context.frontDoor().get();
        return frontDoor == null || r.target() == null ? null
                : frontDoor.renewalProblem(session.id(), r.target().toString());
    }

    private String renewalFailed(Route r) {
        String problem = renewalProblem(r);
        return "The grant could not be renewed: " + (problem != null ? problem
                : "the grant refresher gave no new grant for this target (the ingress's log and audit say why).");
    }
}
