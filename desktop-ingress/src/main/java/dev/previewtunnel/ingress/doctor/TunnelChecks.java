package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.mux.client.TunnelProbe;
import io.netty.handler.ssl.SslContext;

import java.net.URI;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The checks made through the tunnel, over one {@link TunnelProbe}: the default gateway, then each environment's
 * own, as 'run' would use them (reachable, clock, token: {@link GatewayCheck}), then each grant's target through
 * the gateway 'run' would send it to ({@link TargetCheck}). Every connection is closed before {@link #run} returns.
 */
public final class TunnelChecks {
    /** An environment's own gateway ({@code --environment-gateway ENV=URL}) and its token file. */
    public record OwnGateway(URI url, Path tokenFile) {
    }

    private final URI gateway;
    private final Path tokenFile;
    private final Map<String, OwnGateway> ownGateways;
    private final List<Path> grantFiles;
    private final Supplier<SslContext> tls;
    private final Duration timeout;
    private final Clock clock;

    /**
     * @param gateway   the default gateway, or null when there is none to check (already reported)
     * @param tokenFile its token file, or null
     * @param tls       the client TLS context for wss:// gateways; may throw a runtime exception saying why not
     */
    public TunnelChecks(URI gateway, Path tokenFile, Map<String, OwnGateway> ownGateways, List<Path> grantFiles,
                        Supplier<SslContext> tls, Duration timeout, Clock clock) {
        this.gateway = gateway;
        this.tokenFile = tokenFile;
        this.ownGateways = ownGateways;
        this.grantFiles = grantFiles;
        this.tls = tls;
        this.timeout = timeout;
        this.clock = clock;
    }

    public void run(DoctorReport report) {
        try (TunnelProbe probe = new TunnelProbe(timeout, clock)) {
            String token = tokenFile == null ? null : TokenFile.read(report, GatewayLabel.DEFAULT, tokenFile);
            GatewayTunnel defaultGateway = gateway == null ? new GatewayTunnel(GatewayLabel.DEFAULT, null)
                    : new GatewayCheck(GatewayLabel.DEFAULT, gateway, token, tokenFile, tls, probe, timeout)
                    .run(report);
            Map<String, GatewayTunnel> own = new LinkedHashMap<>();
            ownGateways.forEach((environment, endpoint) -> {
                GatewayLabel label = new GatewayLabel(environment);
                String ownToken = TokenFile.read(report, label, endpoint.tokenFile());
                own.put(environment, new GatewayCheck(label, endpoint.url(), ownToken, endpoint.tokenFile(), tls,
                        probe, timeout).run(report));
            });
            new TargetCheck(grantFiles, defaultGateway, own, probe).run(report);
        }
    }
}
