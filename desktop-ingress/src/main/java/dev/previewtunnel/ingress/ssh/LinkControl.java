package dev.previewtunnel.ingress.ssh;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * The link's {@link GatewayControl} for its whole life: each call goes to the current attempt's channel, and fails at
 * once in words while there is none (connecting, reconnecting, closed), so a caller may keep this one reference.
 */
final class LinkControl implements GatewayControl {
    private final String host;
    private final Supplier<String> state;
    private volatile ControlChannel current;

    LinkControl(String host, Supplier<String> state) {
        this.host = host;
        this.state = state;
    }

    void use(ControlChannel channel) {
        current = channel;
    }

    @Override
    public CompletableFuture<String> token(Duration ttl) {
        ControlChannel ch = current;
        return ch == null || !ch.open() ? down() : ch.token(ttl);
    }

    @Override
    public CompletableFuture<IssuedGrant> grant(String session, String target, Duration ttl) {
        ControlChannel ch = current;
        return ch == null || !ch.open() ? down() : ch.grant(session, target, ttl);
    }

    @Override
    public CompletableFuture<List<RemotePort>> ports() {
        ControlChannel ch = current;
        return ch == null || !ch.open() ? down() : ch.ports();
    }

    private <T> CompletableFuture<T> down() {
        return CompletableFuture.failedFuture(new SshLinkException("the SSH link to " + host + " is not up ("
                + state.get() + ")"));
    }
}
