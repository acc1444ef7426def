package dev.previewtunnel.ingress.tunnel;

import java.net.URI;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * The gateway of one named environment and the connection token it accepts. {@link #toString()} never shows the
 * token: only the gateway's scheme, host, port and path.
 */
public record EnvironmentGateway(URI url, Supplier<String> token) {
    public EnvironmentGateway {
        Objects.requireNonNull(url, "url");
        Objects.requireNonNull(token, "token");
    }

    /** {@code ws://host:port/path}: what status output and logs may show. */
    public String shown() {
        return url.getScheme() + "://" + url.getHost() + ":" + url.getPort() + (url.getRawPath() == null ? ""
                : url.getRawPath());
    }

    @Override
    public String toString() {
        return "EnvironmentGateway[" + shown() + "]";
    }
}
