package dev.previewtunnel.cli;

import dev.previewtunnel.local.http.LocalHttpServer;
import picocli.CommandLine.Option;

import java.time.Duration;
import java.util.Map;

/**
 * The limits of a program's loopback endpoints (the ingress's control API, the gateway's admin endpoint, and the
 * metrics endpoint of either), declared once for both programs, with the defaults of
 * {@link LocalHttpServer.Limits#defaults()}.
 */
public final class LocalEndpointOptions {
    public static final String LOCAL_REQUEST_TIMEOUT = "local-request-timeout";
    public static final String LOCAL_CONNECTIONS = "max-local-connections";

    @Option(names = "--" + LOCAL_REQUEST_TIMEOUT, paramLabel = "DURATION",
            converter = Converters.DurationConverter.class,
            description = "On the control API or admin endpoint and the metrics endpoint, a whole request (and each "
                    + "answer) must be done within this, else the connection is closed; 1s to 10m (default: 5s).")
    Duration localRequestTimeout;

    @Option(names = "--" + LOCAL_CONNECTIONS, paramLabel = "N",
            description = "Connections open at once on the control API or admin endpoint, and on the metrics "
                    + "endpoint; more are closed at accept; 1 to 10000 (default: 64).")
    Integer localConnections;

    /**
     * The limits as picocli filled them (the flag, else the environment or config file through
     * {@link SettingsProvider}), else the defaults, each within its range in {@link LocalHttpServer.Limits}.
     */
    public LocalHttpServer.Limits limits(Settings s) {
        LocalHttpServer.Limits d = LocalHttpServer.Limits.defaults();
        Duration timeout = OptionRange.check(s, LOCAL_REQUEST_TIMEOUT, LocalHttpServer.Limits.REQUEST_TIMEOUT,
                localRequestTimeout != null ? localRequestTimeout : d.requestTimeout());
        int connections = OptionRange.check(s, LOCAL_CONNECTIONS, LocalHttpServer.Limits.MAX_CONNECTIONS,
                localConnections != null ? localConnections : d.maxConnections());
        return d.withRequestTimeout(timeout).withMaxConnections(connections);
    }

    /** Adds {@code local} to {@code out} by key, in the forms the flags take (the startup log). */
    public static void describe(LocalHttpServer.Limits local, Map<String, String> out) {
        out.put(LOCAL_REQUEST_TIMEOUT, Cli.human(local.requestTimeout()));
        out.put(LOCAL_CONNECTIONS, Integer.toString(local.maxConnections()));
    }
}
