package dev.previewtunnel.ingress;

import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.local.metrics.OutcomeTimers;
import dev.previewtunnel.local.metrics.StreamStalls;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.concurrent.Future;

import java.util.concurrent.TimeUnit;

/**
 * Ingress counters, gauges and timers (Micrometer). Names as Prometheus shows them, documented in
 * docs/operations.md:
 *
 * <pre>
 *   ptun_ingress_build_info{version,commit,protocol} gauge 1; which build runs (registered by run)
 *   ptun_ingress_tunnel_connections            gauge     tunnel connections up now (default gateway)
 *   ptun_ingress_tunnel_connections_configured gauge     pool size (--pool)
 *   ptun_ingress_tunnel_up                     gauge     1 while at least one connection is up, else 0
 *   ptun_ingress_tunnel_reconnects_total       counter   connections lost or drained (GOAWAY) and replaced
 *   ptun_ingress_tunnel_connections_by_state{state}
 *                                              gauge     connected / connecting / draining connections, and
 *                                                        waiting (slots waiting out their reconnect backoff)
 *   ptun_ingress_tunnel_disconnected_since_timestamp_seconds
 *                                              gauge     while no connection is up: since when (epoch seconds);
 *                                                        0 while connected
 *   ptun_ingress_streams_live                  gauge     tunnel streams open now, on any connection (draining
 *                                                        and dropped ones too, until their streams have ended)
 *   ptun_ingress_streams_opened_total          counter   stream opens the gateway accepted
 *   ptun_ingress_streams_refused_total{code}   counter   stream opens that failed, by ptun-error code
 *   ptun_ingress_stream_bytes_total{direction} counter   DATA bytes, to_gateway / from_gateway
 *   ptun_ingress_stream_open_seconds{outcome}  histogram open asked to answered (ok or the error code)
 *   ptun_ingress_stream_first_byte_seconds     histogram open asked to the first byte from the target
 *   ptun_ingress_stream_stalled_seconds        histogram time a stream could not be written (gateway's
 *                                                        window exhausted or write buffer above its high mark)
 *   ptun_ingress_streams_stalled               gauge     streams that cannot be written now (a stall in progress,
 *                                                        which the histogram records only at its end)
 *   ptun_ingress_environment_tunnel_connections{environment}, ..._tunnel_connections_configured{environment},
 *   ..._tunnel_up{environment}, ..._streams_live{environment},
 *   ..._tunnel_connections_by_state{environment,state},
 *   ..._tunnel_disconnected_since_timestamp_seconds{environment},
 *   ..._tunnel_reconnects_total{environment}
 *                                              the pool meters above, for each environment with a gateway of its
 *                                              own (--environment-gateway); the untagged ones are the default's
 * </pre>
 */
public final class IngressMetrics implements TunnelPool.StreamObserver {
    private final MeterRegistry registry;
    private final OutcomeTimers openTimers;
    private final Counter opened;
    private final Counter bytesToGateway;
    private final Counter bytesFromGateway;
    private final Timer firstByte;
    private final StreamStalls stalls;

    IngressMetrics(MeterRegistry registry, TunnelPool pool) {
        this.registry = registry;
        this.openTimers = new OutcomeTimers(registry, "ptun.ingress.stream.open",
                "stream open asked for to answered (gateway verified the grant and dialed)");
        poolMeters(registry, "ptun.ingress", Tags.empty(), "", pool);
        this.opened = Counter.builder("ptun.ingress.streams.opened")
                .description("stream opens the gateway accepted (target dialed)").register(registry);
        this.bytesToGateway = Counter.builder("ptun.ingress.stream.bytes").tag("direction", "to_gateway")
                .description("DATA payload bytes relayed").register(registry);
        this.bytesFromGateway = Counter.builder("ptun.ingress.stream.bytes").tag("direction", "from_gateway")
                .description("DATA payload bytes relayed").register(registry);
        this.firstByte = Timer.builder("ptun.ingress.stream.first.byte")
                .description("stream open asked for to the first byte from the target")
                .serviceLevelObjectives(OutcomeTimers.LATENCY_BUCKETS).register(registry);
        this.stalls = new StreamStalls(registry, "ptun.ingress", "the gateway's");
    }

    /**
     * The tunnel gauges and the reconnects counter of one pool: the default gateway's under {@code ptun.ingress}
     * without tags (the series as they always were), an environment's own gateway's under
     * {@code ptun.ingress.environment} tagged with the environment. The same suffixes for both, so a query written
     * for one pool reads the other by swapping the prefix.
     */
    private static void poolMeters(MeterRegistry registry, String prefix, Tags tags, String whose, TunnelPool pool) {
        Gauge.builder(prefix + ".tunnel.connections", pool, p -> p.status().connected()).tags(tags)
                .description("tunnel connections up now" + whose).register(registry);
        Gauge.builder(prefix + ".tunnel.connections.configured", pool, p -> p.status().size()).tags(tags)
                .description("tunnel connections the pool keeps (--pool)" + whose).register(registry);
        Gauge.builder(prefix + ".tunnel.up", pool, p -> p.status().connected() > 0 ? 1 : 0).tags(tags)
                .description("1 while at least one tunnel connection is up, 0 while reconnecting" + whose)
                .register(registry);
        Gauge.builder(prefix + ".streams.live", pool, p -> p.status().liveStreams()).tags(tags)
                .description("tunnel streams open now" + whose).register(registry);
        stateGauge(registry, prefix, tags, whose, pool, "connected", TunnelPool.Status::connected);
        stateGauge(registry, prefix, tags, whose, pool, "connecting", TunnelPool.Status::connecting);
        stateGauge(registry, prefix, tags, whose, pool, "draining", TunnelPool.Status::draining);
        stateGauge(registry, prefix, tags, whose, pool, "waiting", TunnelPool.Status::waiting);
        Gauge.builder(prefix + ".tunnel.disconnected.since.timestamp", pool, p -> {
                    java.time.Instant since = p.status().downSince();
                    return since == null ? 0 : since.getEpochSecond();
                }).tags(tags).baseUnit("seconds")
                .description("while no tunnel connection is up: since when, in seconds since the epoch; 0 while "
                        + "connected" + whose).register(registry);
        FunctionCounter.builder(prefix + ".tunnel.reconnects", pool, p -> p.status().reconnects()).tags(tags)
                .description("tunnel connections lost or drained (GOAWAY) and replaced" + whose).register(registry);
    }

    private static void stateGauge(MeterRegistry registry, String prefix, Tags tags, String whose, TunnelPool pool,
                                   String state, java.util.function.ToIntFunction<TunnelPool.Status> count) {
        Gauge.builder(prefix + ".tunnel.connections.by.state", pool, p -> count.applyAsInt(p.status()))
                .tags(tags).tag("state", state)
                .description("tunnel connections by state: connected, connecting, draining (GOAWAY received, "
                        + "finishing streams), waiting (a slot waiting out its reconnect backoff)" + whose)
                .register(registry);
    }

    @Override
    public void settled(Future<Http2StreamChannel> result, long startNanos) {
        long elapsed = System.nanoTime() - startNanos;
        String outcome;
        if (result.isSuccess()) {
            outcome = OutcomeTimers.OK;
            opened.increment();
            Http2StreamChannel stream = result.getNow();
            stream.pipeline().addFirst("ptun-metrics", new StreamMeter(startNanos));
        } else {
            Throwable cause = result.cause();
            outcome = cause instanceof TunnelStreamException t ? t.error().code() : "internal";
            Counter.builder("ptun.ingress.streams.refused")
                    .description("stream opens that failed, by ptun-error code")
                    .tag("code", outcome).register(registry).increment();
        }
        openTimers.of(outcome).record(elapsed, TimeUnit.NANOSECONDS);
    }

    /**
     * The meters of the pool of an environment with a gateway of its own: the same as the default pool's, named
     * {@code ptun.ingress.environment.*} and tagged with the environment. The default pool's keep their untagged
     * names: adding a tag to them would change every existing series (and Prometheus wants one set of tag keys per
     * name).
     */
    void environmentPool(String environment, TunnelPool pool) {
        poolMeters(registry, "ptun.ingress.environment", Tags.of("environment", environment),
                " (to this environment's own gateway)", pool);
    }

    public MeterRegistry registry() {
        return registry;
    }

    /** Observes one open stream: DATA bytes each way, the first byte, unwritable time. Passes everything on. */
    private final class StreamMeter extends ChannelDuplexHandler {
        private final long startNanos;
        private boolean sawFirstByte;
        private long stallStart;

        StreamMeter(long startNanos) {
            this.startNanos = startNanos;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof Http2DataFrame data) {
                int n = data.content().readableBytes();
                if (n > 0) {
                    bytesFromGateway.increment(n);
                    if (!sawFirstByte) {
                        sawFirstByte = true;
                        firstByte.record(System.nanoTime() - startNanos, TimeUnit.NANOSECONDS);
                    }
                }
            }
            ctx.fireChannelRead(msg);
        }

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            if (msg instanceof Http2DataFrame data) {
                bytesToGateway.increment(data.content().readableBytes());
            }
            ctx.write(msg, promise);
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            stallStart = stalls.writabilityChanged(stallStart, ctx.channel().isWritable());
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            stallStart = stalls.ended(stallStart);
            ctx.fireChannelInactive();
        }
    }
}
