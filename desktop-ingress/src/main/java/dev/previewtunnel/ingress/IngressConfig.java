package dev.previewtunnel.ingress;

import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.mux.wire.SettingRange;

import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;

/**
 * Everything an ingress needs to run.
 *
 * @param listen         where the browser-facing proxy listens (loopback only; see docs/desktop-ingress.md)
 * @param gateway        {@code ws://} or {@code wss://} URL of the environment gateway's tunnel endpoint
 * @param poolSize       tunnel connections kept to the gateway, at least one per event loop; a stream goes to the
 *                       least-loaded one on its browser connection's loop
 * @param connectTimeout TCP + WebSocket handshake bound for one tunnel connection
 * @param openTimeout    how long the gateway may take to answer a stream open (dial included)
 * @param maxRequestHead limit on a browser request line plus headers
 * @param ioThreads      event loops the proxy and its tunnel connections share (a browser connection and its tunnel
 *                       stream are always on the same one)
 * @param requestHeadTimeout a browser connection must deliver each request head within this time after the
 *                       previous exchange ended (slowloris bound; also closes idle keep-alive connections)
 * @param browserLimits  the browser-facing listener's connection budget and body deadline
 */
public record IngressConfig(
        InetSocketAddress listen,
        URI gateway,
        MuxSettings mux,
        int poolSize,
        Duration connectTimeout,
        Duration openTimeout,
        int maxRequestHead,
        int ioThreads,
        Duration requestHeadTimeout,
        BrowserConnectionLimits browserLimits) {

    // The ranges an operator may set ('run' checks its flags against them); not enforced here, so that tests can
    // use shorter deadlines.
    public static final SettingRange<Duration> REQUEST_HEAD_TIMEOUT =
            new SettingRange<>("requestHeadTimeout", Duration.ofSeconds(1), Duration.ofHours(1));
    public static final SettingRange<Long> MAX_REQUEST_HEAD = new SettingRange<>("maxRequestHead", 4L << 10, 1L << 20);
    public static final SettingRange<Duration> CONNECT_TIMEOUT =
            new SettingRange<>("connectTimeout", Duration.ofSeconds(1), Duration.ofMinutes(10));
    public static final SettingRange<Duration> OPEN_TIMEOUT =
            new SettingRange<>("openTimeout", Duration.ofSeconds(1), Duration.ofMinutes(10));

    /**
     * One event loop: one browser's traffic is many small exchanges, and on one loop the benchmark's opens were
     * ~100 us faster at p50 and ~80 us cheaper in desktop CPU on two vCPUs, at the CONNECT front (the floor's front
     * gained the same), at a cost in the aggregate of many parallel bulk streams (docs/performance.md finding 59).
     */
    public static final int DEFAULT_IO_THREADS = 1;
    /** Tunnel connections a pool keeps unless {@code --pool} says otherwise (and what the benchmark runs). */
    public static final int DEFAULT_POOL = 2;
    public static final int MAX_IO_THREADS = 16;

    public IngressConfig(InetSocketAddress listen, URI gateway, MuxSettings mux, int poolSize,
                         Duration connectTimeout, Duration openTimeout, int maxRequestHead, int ioThreads,
                         Duration requestHeadTimeout) {
        this(listen, gateway, mux, poolSize, connectTimeout, openTimeout, maxRequestHead, ioThreads,
                requestHeadTimeout, BrowserConnectionLimits.defaults());
    }

    public IngressConfig(InetSocketAddress listen, URI gateway, MuxSettings mux, int poolSize,
                         Duration connectTimeout, Duration openTimeout, int maxRequestHead, int ioThreads) {
        this(listen, gateway, mux, poolSize, connectTimeout, openTimeout, maxRequestHead, ioThreads,
                Duration.ofSeconds(30));
    }

    public static IngressConfig defaults(InetSocketAddress listen, URI gateway) {
        return new IngressConfig(listen, gateway, MuxSettings.defaults(), DEFAULT_POOL, Duration.ofSeconds(5),
                Duration.ofSeconds(10), 16 * 1024, DEFAULT_IO_THREADS, Duration.ofSeconds(30));
    }

    public IngressConfig withRequestHeadTimeout(Duration timeout) {
        return new IngressConfig(listen, gateway, mux, poolSize, connectTimeout, openTimeout, maxRequestHead,
                ioThreads, timeout, browserLimits);
    }

    public IngressConfig withGateway(URI uri) {
        return new IngressConfig(listen, uri, mux, poolSize, connectTimeout, openTimeout, maxRequestHead,
                ioThreads, requestHeadTimeout, browserLimits);
    }

    public IngressConfig withPoolSize(int size) {
        return new IngressConfig(listen, gateway, mux, size, connectTimeout, openTimeout, maxRequestHead, ioThreads,
                requestHeadTimeout, browserLimits);
    }

    public IngressConfig withIoThreads(int threads) {
        return new IngressConfig(listen, gateway, mux, poolSize, connectTimeout, openTimeout, maxRequestHead,
                threads, requestHeadTimeout, browserLimits);
    }

    public IngressConfig withListen(InetSocketAddress address) {
        return new IngressConfig(address, gateway, mux, poolSize, connectTimeout, openTimeout, maxRequestHead,
                ioThreads, requestHeadTimeout, browserLimits);
    }

    public IngressConfig withMux(MuxSettings settings) {
        return new IngressConfig(listen, gateway, settings, poolSize, connectTimeout, openTimeout, maxRequestHead,
                ioThreads, requestHeadTimeout, browserLimits);
    }

    public IngressConfig withBrowserLimits(BrowserConnectionLimits limits) {
        return new IngressConfig(listen, gateway, mux, poolSize, connectTimeout, openTimeout, maxRequestHead,
                ioThreads, requestHeadTimeout, limits);
    }
}
