package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.IngressAuditEvent;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.ingress.refresh.GrantRefresher;
import dev.previewtunnel.ingress.session.AuthorityMap;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.Route;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.local.audit.AuditLog;
import io.netty.channel.EventLoop;

import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * For an open refused because the grant expired or was revoked: asks the configured refresher for a new grant for
 * the same target, judges it, attaches it and gives the route it makes (null when there is none), audited as
 * {@code grant_refresh}. The {@link StreamOpener} asks once per request.
 */
final class GrantRefresh {
    private GrantRefresh() {
    }

    /** Whether a refresh could help: a refresher is configured, the route has a grant, the error is about it. */
    static boolean applies(GrantRefresher refresher, Route route, TunnelError error) {
        return refresher != null && route.grant() != null
                && (error == TunnelError.GRANT_EXPIRED || error == TunnelError.GRANT_REVOKED);
    }

    /**
     * Runs {@code then} on {@code loop} (the refresher answers on a thread of its own), unless the request stopped
     * waiting meanwhile: then nothing is attached or audited.
     */
    static void refresh(GrantRefresher refresher, AuditLog audit, BrowserSession s, Route old, TunnelError error,
                        EventLoop loop, BooleanSupplier stillWaiting, Consumer<Route> then) {
        AuthorityMap.Entry oldEntry = s.authorities().entries().stream()
                .filter(e -> e.grantId().equals(old.grantId())).findFirst().orElse(null);
        String name = oldEntry == null ? null : oldEntry.name();
        String environment = oldEntry == null ? null : oldEntry.view().environment();
        refresher.refresh(s.id(), old.target().toString(), old.grantId(), error).whenComplete((grant, failure) ->
                loop.execute(() -> {
                    if (!stillWaiting.getAsBoolean()) {
                        return;
                    }
                    Route fresh = failure == null ? attach(s, old, grant, name, environment) : null;
                    audit.event(IngressAuditEvent.GRANT_REFRESH).put("session", s.id())
                            .put("authority", old.requested().toString()).put("oldGrant", old.grantId())
                            .put("newGrant", fresh == null ? null : fresh.grantId())
                            .put("ok", fresh == null ? "false" : "true").write();
                    then.accept(fresh);
                }));
    }

    /**
     * Judged before it is attached: a grant for another target or environment is not what was asked for, and
     * attaching it could replace an unrelated entry. Nor is one for a grant detached while the hook ran: refreshing
     * must not undo a detach. Replaced atomically against a detach on the control API's thread. When another
     * request's refresh got there first, its grant serves this request too.
     */
    private static Route attach(BrowserSession s, Route old, String grant, String name, String environment) {
        try {
            UnverifiedGrantView view = UnverifiedGrantView.decode(grant);
            if (new Authority(view.targetHost(), view.targetPort()).equals(old.target())
                    && view.environment().equals(environment) && !view.jti().equals(old.grantId())
                    && s.authorities().replace(old.grantId(), grant, name).isPresent()) {
                return s.authorities().route(old.requested()).orElse(null);
            }
            return null;
        } catch (IllegalArgumentException notAGrant) {
            return null;
        }
    }
}
