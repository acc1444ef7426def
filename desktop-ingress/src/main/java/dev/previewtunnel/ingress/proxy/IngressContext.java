package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.session.SessionRegistry;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.mux.audit.AuditLog;

/** What every browser connection of one ingress shares. */
public record IngressContext(IngressConfig config, SessionRegistry sessions, TunnelPool pool, AuditLog audit) {
}
