package dev.previewtunnel.ingress.status;

import dev.previewtunnel.mux.wire.TunnelError;

import java.net.URI;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * What the one-command front door ({@code desktop-ingress open}) adds to the status page and the error pages. Set
 * with {@code Ingress#frontDoor(FrontDoor)}; null under plain {@code run}, where both pages use the ingress's own
 * facts. Read by the proxy on the event loop: implementations answer fast and do no I/O.
 */
public interface FrontDoor {
    /** Extra lines for the status page: e.g. "SSH: connected to host (since 10:02)". */
    List<StatusLine> status(String sessionId);

    /** Remote ports listening but not yet granted to this session. */
    CompletableFuture<List<Integer>> discoveredPorts(String sessionId);

    /** Grants the port to the session; completes with the URL to open, e.g. http://localhost:5174/. */
    CompletableFuture<URI> openPort(String sessionId, int port);

    /**
     * The action that fixes this error for this authority, in words with the exact command, or null for the
     * generic hint; e.g. "Start the dev server on host (it should listen on 127.0.0.1:5173); this page reloads
     * when it answers."
     */
    String fix(TunnelError error, String authority);

    /** Whether a grant renewal for this target failed, and why in words (null when not). */
    String renewalProblem(String sessionId, String target);
}
