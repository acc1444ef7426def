package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.refresh.GrantRefresher;
import dev.previewtunnel.ingress.session.SessionRegistry;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.mux.audit.AuditLog;

import java.util.concurrent.atomic.AtomicReference;

/**
 * What every browser connection of one ingress shares. {@code refresher} may hold a {@link GrantRefresher}
 * (set at any time; empty means expired or revoked grants are not refreshed).
 */
public record IngressContext(IngressConfig config, SessionRegistry sessions, TunnelPool pool, AuditLog audit,
                             DirectDialer directDialer, AtomicReference<GrantRefresher> refresher) {

    public IngressContext(IngressConfig config, SessionRegistry sessions, TunnelPool pool, AuditLog audit,
                          DirectDialer directDialer) {
        this(config, sessions, pool, audit, directDialer, new AtomicReference<>());
    }

    /** Without an explicit dialer: direct egress uses {@link DirectDialer#standard}. */
    public IngressContext(IngressConfig config, SessionRegistry sessions, TunnelPool pool, AuditLog audit) {
        this(config, sessions, pool, audit, DirectDialer.standard(config.connectTimeout()));
    }
}
