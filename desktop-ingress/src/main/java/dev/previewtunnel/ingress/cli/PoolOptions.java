package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import picocli.CommandLine.Option;

import java.util.Map;

/**
 * How {@code run} spreads its work: the tunnel connections each pool keeps and the event loops they and the proxy
 * run on. The two go together: a pool keeps at least one connection per loop, so that every browser connection's
 * stream opens on a tunnel connection of its own loop (docs/architecture.md "Threads and memory").
 */
final class PoolOptions {
    @Option(names = "--pool", paramLabel = "N", defaultValue = "" + IngressConfig.DEFAULT_POOL,
            description = "Tunnel connections kept open to the gateway, 1 to " + TunnelPool.MAX_SIZE
                    + " (default: " + IngressConfig.DEFAULT_POOL + "); at least one per event loop (--io-threads)"
                    + " is kept.")
    Integer pool;

    @Option(names = "--io-threads", paramLabel = "N", defaultValue = "" + IngressConfig.DEFAULT_IO_THREADS,
            description = "Event-loop threads of the proxy and its tunnel connections, 1 to "
                    + IngressConfig.MAX_IO_THREADS + " (default: " + IngressConfig.DEFAULT_IO_THREADS + "). One "
                    + "suits one browser's many small exchanges (faster opens); more spread many parallel bulk "
                    + "transfers over more cores (docs/operations.md).")
    Integer ioThreads;

    /** {@code base} with the pool size and loop count picocli filled, each checked against its range. */
    IngressConfig applyTo(IngressConfig base, Settings s) {
        int size = s.count("pool", pool, 1, TunnelPool.MAX_SIZE);
        int threads = s.count("io-threads", ioThreads, 1, IngressConfig.MAX_IO_THREADS);
        return base.withPoolSize(size).withIoThreads(threads);
    }

    /** Adds {@code config}'s pool and loops to the limits log line, with the connections that makes. */
    static void describe(IngressConfig config, Map<String, String> out) {
        out.put("pool", Integer.toString(config.poolSize()));
        out.put("io-threads", Integer.toString(config.ioThreads()));
        out.put("pool-connections", Integer.toString(TunnelPool.connections(config.poolSize(),
                config.ioThreads()))); // what --pool keeps on these loops
    }
}
