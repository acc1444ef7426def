package dev.previewtunnel.ingress.ssh;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The remote gateway's control channel ({@code serve --stdio-control} over the SSH channel's stdin/stdout): mints the
 * connection token and grants on the remote, where the keys are. Every call completes within a bounded time, and
 * fails at once with an {@link SshLinkException} when the link is down; never blocks the caller.
 */
public interface GatewayControl {
    /** A connection token for the link's environment. */
    CompletableFuture<String> token(Duration ttl);

    /** A grant for {@code session} to reach {@code target} (e.g. {@code localhost:5173}). */
    CompletableFuture<IssuedGrant> grant(String session, String target, Duration ttl);

    /** The remote user's loopback listeners ({@code env-gateway ports}); listing grants nothing. */
    CompletableFuture<List<RemotePort>> ports();
}
