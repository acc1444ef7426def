package dev.previewtunnel.ingress.session;

import dev.previewtunnel.mux.wire.Authority;

/**
 * A grant's virtual host already names another target in the session: attach it under another name. The message
 * names the virtual host, the other grant's id and its target, never a grant.
 */
public final class VirtualHostTakenException extends RuntimeException {
    private final transient Authority virtualHost;
    private final String holderGrantId;

    public VirtualHostTakenException(Authority virtualHost, String holderGrantId, Authority holderTarget) {
        super("virtual host " + virtualHost + " is already taken by grant " + holderGrantId + " for "
                + holderTarget + "; attach this grant under another name");
        this.virtualHost = virtualHost;
        this.holderGrantId = holderGrantId;
    }

    public Authority virtualHost() {
        return virtualHost;
    }

    public String holderGrantId() {
        return holderGrantId;
    }
}
