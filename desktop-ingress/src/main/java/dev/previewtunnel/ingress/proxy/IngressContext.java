package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.refresh.GrantRefresher;
import dev.previewtunnel.ingress.session.Route;
import dev.previewtunnel.ingress.status.FrontDoor;
import dev.previewtunnel.ingress.status.RecentErrors;
import dev.previewtunnel.ingress.session.SessionRegistry;
import dev.previewtunnel.ingress.tunnel.EnvironmentPools;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.local.audit.AuditLog;

import java.util.concurrent.atomic.AtomicReference;

/**
 * What every browser connection of one ingress shares. {@code refresher} may hold a {@link GrantRefresher}
 * (set at any time; empty means expired or revoked grants are not refreshed); {@code frontDoor} a {@link FrontDoor}
 * (empty under plain {@code run}); {@code recentErrors} the last refusals of each session, for its status page.
 */
public record IngressContext(IngressConfig config, SessionRegistry sessions, EnvironmentPools pools, AuditLog audit,
                             DirectDialer directDialer, AtomicReference<GrantRefresher> refresher,
                             AtomicReference<FrontDoor> frontDoor, RecentErrors recentErrors) {

    public IngressContext(IngressConfig config, SessionRegistry sessions, EnvironmentPools pools, AuditLog audit,
                          DirectDialer directDialer) {
        this(config, sessions, pools, audit, directDialer, new AtomicReference<>(), new AtomicReference<>(),
                new RecentErrors());
    }

    /** With one pool for every environment. */
    public IngressContext(IngressConfig config, SessionRegistry sessions, TunnelPool pool, AuditLog audit,
                          DirectDialer directDialer) {
        this(config, sessions, EnvironmentPools.single(pool), audit, directDialer);
    }

    /** Without an explicit dialer: direct egress uses {@link DirectDialer#standard}. */
    public IngressContext(IngressConfig config, SessionRegistry sessions, TunnelPool pool, AuditLog audit) {
        this(config, sessions, pool, audit, DirectDialer.standard(config.connectTimeout()));
    }

    /** The pool that carries streams of {@code route}: its grant's environment's. */
    public TunnelPool pool(Route route) {
        return pools.forEnvironment(route.environment());
    }
}
