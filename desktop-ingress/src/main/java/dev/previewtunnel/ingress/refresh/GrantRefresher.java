package dev.previewtunnel.ingress.refresh;

import dev.previewtunnel.mux.wire.TunnelError;

import java.util.concurrent.CompletableFuture;

/**
 * Asked once, when the gateway refuses a stream because its grant expired or was revoked, for a new grant for
 * the same target. The ingress attaches the answer to the session and retries the open once; if there is no
 * answer (or the answer names another target) the browser gets the expired/revoked page.
 */
@FunctionalInterface
public interface GrantRefresher {
    /**
     * @param session   browser session id
     * @param target    the grant's target, {@code host:port}
     * @param grantId   id of the refused grant
     * @param why       {@link TunnelError#GRANT_EXPIRED} or {@link TunnelError#GRANT_REVOKED}
     * @return the new grant (a JWT), completing off the event loop
     */
    CompletableFuture<String> refresh(String session, String target, String grantId, TunnelError why);
}
