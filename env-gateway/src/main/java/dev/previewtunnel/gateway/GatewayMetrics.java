package dev.previewtunnel.gateway;

import dev.previewtunnel.grants.GrantFailure;
import dev.previewtunnel.local.metrics.OutcomeTimers;
import dev.previewtunnel.local.metrics.StreamStalls;
import dev.previewtunnel.mux.wire.TunnelError;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.channel.Channel;
import io.netty.util.AttributeKey;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Gateway counters, gauges and timers (Micrometer). Names as Prometheus shows them, documented in
 * docs/operations.md:
 *
 * <pre>
 *   ptun_gateway_build_info{version,commit,protocol} gauge 1; which build runs (registered by serve)
 *   ptun_gateway_connections                      gauge    tunnel connections open now
 *   ptun_gateway_connections_by_state{state}      gauge    of those: open (taking streams) or draining (GOAWAY
 *                                                          sent at shutdown, streams in flight finishing)
 *   ptun_gateway_connections_opened_total         counter  tunnel connections accepted (token verified)
 *   ptun_gateway_token_failures_total{reason}     counter  upgrades refused, by token failure (token_expired...)
 *   ptun_gateway_streams_live                     gauge    streams open now
 *   ptun_gateway_streams_opened_total             counter  streams answered 200 (target dialed)
 *   ptun_gateway_streams_refused_total{code,reason} counter streams refused, by ptun-error code and detail
 *   ptun_gateway_grant_failures_total{reason}     counter  grants refused, by verification failure
 *   ptun_gateway_grant_verifications_total{outcome} counter grant verifications run (ok, failed); a stream
 *                                                          refused during its token's cool-down runs none
 *   ptun_gateway_token_verifications_total{outcome} counter connection-token verifications run (ok, failed); an
 *                                                          upgrade refused by the failing-handshake budget runs none
 *   ptun_gateway_dials_total                      counter  TCP connects attempted to targets
 *   ptun_gateway_stream_bytes_total{direction}    counter  DATA bytes, to_target / from_target
 *   ptun_gateway_stream_open_seconds{outcome}     histogram CONNECT received to answer sent (verify+policy+dial)
 *   ptun_gateway_stream_stalled_seconds           histogram time a stream could not be written (peer window
 *                                                          exhausted or write buffer above its high mark)
 *   ptun_gateway_streams_stalled                  gauge    streams that cannot be written now (a stall in
 *                                                          progress, which the histogram records only at its end)
 * </pre>
 *
 * The failure counters are registered at 0 for every known reason ({@link GrantFailure}) when the gateway starts:
 * Prometheus' {@code increase()} and {@code rate()} need an earlier sample, so a series that first appears with
 * the value 1 would hide the first failure of each reason.
 */
public final class GatewayMetrics {
    private static final int OPEN = 0;
    private static final int DRAINING = 1;
    private static final int CLOSED = 2;
    private static final AttributeKey<AtomicInteger> STATE = AttributeKey.valueOf("ptun.connectionState");

    private final OutcomeTimers openTimers;
    private final MeterRegistry registry;
    private final Counter opened;
    private final Counter dials;
    private final Counter grantsOk;
    private final Counter grantsFailed;
    private final Counter tokensOk;
    private final Counter tokensFailed;
    private final Counter connectionsOpened;
    private final AtomicInteger connections = new AtomicInteger();
    private final AtomicInteger connectionsOpen = new AtomicInteger();
    private final AtomicInteger connectionsDraining = new AtomicInteger();
    private final Counter bytesToTarget;
    private final Counter bytesFromTarget;
    private final StreamStalls stalls;

    GatewayMetrics(MeterRegistry registry, LiveStreams live) {
        this.registry = registry;
        this.openTimers = new OutcomeTimers(registry, "ptun.gateway.stream.open",
                "CONNECT received to answer sent: grant verification, policy, DNS and dial");
        this.opened = Counter.builder("ptun.gateway.streams.opened")
                .description("streams answered 200: grant verified, target dialed").register(registry);
        this.dials = Counter.builder("ptun.gateway.dials").description("TCP connects attempted to targets")
                .register(registry);
        this.grantsOk = verifications("grant", "ok");
        this.grantsFailed = verifications("grant", "failed");
        this.tokensOk = verifications("token", "ok");
        this.tokensFailed = verifications("token", "failed");
        Gauge.builder("ptun.gateway.streams.live", live, LiveStreams::size).description("streams open now")
                .register(registry);
        this.connectionsOpened = Counter.builder("ptun.gateway.connections.opened")
                .description("tunnel connections accepted (token verified)").register(registry);
        Gauge.builder("ptun.gateway.connections", connections, AtomicInteger::get)
                .description("tunnel connections open now").register(registry);
        Gauge.builder("ptun.gateway.connections.by.state", connectionsOpen, AtomicInteger::get).tag("state", "open")
                .description("tunnel connections open now, by state").register(registry);
        Gauge.builder("ptun.gateway.connections.by.state", connectionsDraining, AtomicInteger::get)
                .tag("state", "draining").description("tunnel connections open now, by state").register(registry);
        for (GrantFailure failure : GrantFailure.values()) {
            grantFailures(failure.code());
            tokenFailures(failure.tokenCode());
        }
        this.bytesToTarget = Counter.builder("ptun.gateway.stream.bytes").tag("direction", "to_target")
                .description("DATA payload bytes relayed").register(registry);
        this.bytesFromTarget = Counter.builder("ptun.gateway.stream.bytes").tag("direction", "from_target")
                .description("DATA payload bytes relayed").register(registry);
        this.stalls = new StreamStalls(registry, "ptun.gateway", "the ingress's");
    }

    void opened() {
        opened.increment();
    }

    void dialAttempted() {
        dials.increment();
    }

    /** TCP connects attempted so far ({@code ptun.gateway.dials}, counted just before each connect). */
    public long dialAttempts() {
        return (long) dials.count();
    }

    private Counter verifications(String what, String outcome) {
        return Counter.builder("ptun.gateway." + what + ".verifications")
                .description(what + " verifications run (signature and claims), by outcome")
                .tag("outcome", outcome)
                .register(registry);
    }

    void grantVerified(boolean ok) {
        (ok ? grantsOk : grantsFailed).increment();
    }

    void tokenVerified(boolean ok) {
        (ok ? tokensOk : tokensFailed).increment();
    }

    /** Grant verifications run so far with the outcome {@code ok}, else {@code failed}. */
    public long grantVerifications(boolean ok) {
        return (long) (ok ? grantsOk : grantsFailed).count();
    }

    /** Connection-token verifications run so far with the outcome {@code ok}, else {@code failed}. */
    public long tokenVerifications(boolean ok) {
        return (long) (ok ? tokensOk : tokensFailed).count();
    }

    void refused(TunnelError error, String detail) {
        Counter.builder("ptun.gateway.streams.refused")
                .description("streams refused, by ptun-error code and detail")
                .tag("code", error.code())
                .tag("reason", detail == null ? "" : detail)
                .register(registry)
                .increment();
        if (error == TunnelError.GRANT_REFUSED || error == TunnelError.GRANT_EXPIRED
                || error == TunnelError.GRANT_REVOKED) {
            grantFailures(detail == null ? error.code() : detail).increment();
        }
    }

    private Counter grantFailures(String reason) {
        return Counter.builder("ptun.gateway.grant.failures")
                .description("grants refused at stream open, by verification failure")
                .tag("reason", reason)
                .register(registry);
    }

    private Counter tokenFailures(String reason) {
        return Counter.builder("ptun.gateway.token.failures")
                .description("tunnel connections refused at upgrade, by token verification failure")
                .tag("reason", reason)
                .register(registry);
    }

    /** A WebSocket upgrade refused because of its connection token ({@code failure}: token_expired, ...). */
    void tokenRefused(String failure) {
        tokenFailures(failure).increment();
    }

    /** A tunnel connection was accepted; the gauge follows it until it closes. */
    void connectionOpened(Channel parent) {
        connectionsOpened.increment();
        connections.incrementAndGet();
        connectionsOpen.incrementAndGet();
        AtomicInteger state = new AtomicInteger(OPEN);
        parent.attr(STATE).set(state);
        parent.closeFuture().addListener(f -> {
            connections.decrementAndGet();
            int was = state.getAndSet(CLOSED);
            (was == DRAINING ? connectionsDraining : connectionsOpen).decrementAndGet();
        });
    }

    /** The gateway sent GOAWAY on this connection to drain it (shutdown): it moves from open to draining. */
    void connectionDraining(Channel parent) {
        AtomicInteger state = parent.attr(STATE).get();
        if (state != null && state.compareAndSet(OPEN, DRAINING)) {
            connectionsOpen.decrementAndGet();
            connectionsDraining.incrementAndGet();
        }
    }

    /** Tunnel connections open now. */
    public int openConnections() {
        return connections.get();
    }

    public MeterRegistry registry() {
        return registry;
    }

    /** DATA payload bytes of a stream, towards its target ({@link StreamMeter}). */
    void bytesToTarget(int bytes) {
        bytesToTarget.increment(bytes);
    }

    /** DATA payload bytes of a stream, from its target ({@link StreamMeter}). */
    void bytesFromTarget(int bytes) {
        bytesFromTarget.increment(bytes);
    }

    /** A stream's CONNECT answered, with its ptun-error code (null: accepted), {@code nanos} after it arrived. */
    void openAnswered(CharSequence errorCode, long nanos) {
        openTimers.of(errorCode == null ? OutcomeTimers.OK : errorCode.toString())
                .record(nanos, TimeUnit.NANOSECONDS);
    }

    /** The stall timer and gauge of the gateway's streams. */
    StreamStalls stalls() {
        return stalls;
    }
}
