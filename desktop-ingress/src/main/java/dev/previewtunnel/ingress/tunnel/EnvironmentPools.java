package dev.previewtunnel.ingress.tunnel;

import io.netty.util.concurrent.Future;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The tunnel pools of one ingress, one per gateway: the default gateway ({@code --gateway}), which serves every
 * environment that has no gateway of its own, and one pool per environment named with
 * {@code --environment-gateway ENV=URL}. A stream goes to the pool of its grant's environment.
 *
 * <p>Every pool is created and started with the ingress, not on first use: the environments are all known at
 * startup, so a wrong URL or a refused token shows in the log and in {@code status} at once instead of on the
 * first browser request, and that request does not pay for the WebSocket handshake.
 */
public final class EnvironmentPools implements AutoCloseable {
    private final TunnelPool defaultPool;
    private final Map<String, TunnelPool> byEnvironment;
    private final Map<String, Future<Void>> firstConnections = 
            Collections.synchronizedMap(new LinkedHashMap<>());

    /**
     * @param defaultPool  the pool to the default gateway
     * @param environments the named environments' gateways, in the order given
     * @param newPool      makes the (not yet started) pool for one gateway
     */
    public EnvironmentPools(TunnelPool defaultPool, Map<String, EnvironmentGateway> environments,
                            Function<EnvironmentGateway, TunnelPool> newPool) {
        this.defaultPool = defaultPool;
        Map<String, TunnelPool> pools = new LinkedHashMap<>();
        environments.forEach((environment, gateway) -> pools.put(environment, newPool.apply(gateway)));
        this.byEnvironment = Collections.unmodifiableMap(pools);
    }

    /** Only the default pool: every environment's streams go to it. */
    public static EnvironmentPools single(TunnelPool pool) {
        return new EnvironmentPools(pool, Map.of(), g -> {
            throw new AssertionError("no environments");
        });
    }

    /**
     * Starts every pool. Returns the default pool's first-connection future; each named pool's is in
     * {@link #firstConnections()} (see {@link TunnelPool#start()}).
     */
    public Future<Void> start() {
        Future<Void> first = defaultPool.start();
        byEnvironment.forEach((environment, pool) -> firstConnections.put(environment, pool.start()));
        return first;
    }

    /** After {@link #start()}: by environment, when each named pool's first connection attempt settled. */
    public Map<String, Future<Void>> firstConnections() {
        synchronized (firstConnections) {
            return Collections.unmodifiableMap(new LinkedHashMap<>(firstConnections));
        }
    }

    /** The pool that carries streams of {@code environment}'s grants: its own, else the default one. */
    public TunnelPool forEnvironment(String environment) {
        TunnelPool own = environment == null ? null : byEnvironment.get(environment);
        return own != null ? own : defaultPool;
    }

    /** Whether {@code environment} has a gateway of its own (else it uses the default gateway). */
    public boolean hasOwnGateway(String environment) {
        return environment != null && byEnvironment.containsKey(environment);
    }

    public TunnelPool defaultPool() {
        return defaultPool;
    }

    /** The named environments' pools, in the order given. */
    public Map<String, TunnelPool> byEnvironment() {
        return byEnvironment;
    }

    /** Sets the observer of stream opens on every pool. */
    public void streamObserver(TunnelPool.StreamObserver observer) {
        all().forEach(p -> p.streamObserver(observer));
    }

    /** Closes every pool: each connection sends GOAWAY and closes once its live streams have ended. */
    @Override
    public void close() {
        close(Duration.ZERO);
    }

    /** Stops every pool; each connection closes once its streams end, within {@code drain} (see TunnelPool). */
    public void close(Duration drain) {
        all().forEach(p -> p.close(drain));
    }

    /** After the drain: closes what is still open in every pool, waiting at most {@code timeout} in all. */
    public void closeRemaining(Duration timeout) {
        all().forEach(TunnelPool::closeConnectionsNow);
        awaitClosed(timeout);
    }

    /**
     * After {@link #close(Duration)}: waits until every connection of every pool has closed, all within one
     * {@code timeout}. Returns true if all closed in time.
     */
    public boolean awaitClosed(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (TunnelPool pool : all()) {
            if (!pool.awaitClosed(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())))) {
                return false;
            }
        }
        return true;
    }

    /** The default pool, then the named environments' pools in the order given. */
    private List<TunnelPool> all() {
        List<TunnelPool> all = new ArrayList<>();
        all.add(defaultPool);
        all.addAll(byEnvironment.values());
        return all;
    }
}
