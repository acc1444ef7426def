package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.FileModes;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.client.TunnelProbe;
import dev.previewtunnel.mux.wire.TunnelStreamException;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;

/**
 * {@code target}: each grant's target opens through the gateway 'run' would send its streams to (its
 * environment's own, else the default one): one CONNECT stream per grant, closed at once. A refusal is reported
 * with its typed code and what to do (docs/mux-protocol.md, error codes).
 */
public final class TargetCheck {
    private final List<Path> grantFiles;
    private final GatewayTunnel defaultGateway;
    private final Map<String, GatewayTunnel> ownGateways;
    private final TunnelProbe probe;

    public TargetCheck(List<Path> grantFiles, GatewayTunnel defaultGateway, Map<String, GatewayTunnel> ownGateways,
                       TunnelProbe probe) {
        this.grantFiles = grantFiles;
        this.defaultGateway = defaultGateway;
        this.ownGateways = ownGateways;
        this.probe = probe;
    }

    private record Grant(String value, UnverifiedGrantView view) {
        @Override
        public String toString() {
            return "Grant[" + view.jti() + "]"; // never the grant
        }
    }

    public void run(DoctorReport report) {
        if (grantFiles.isEmpty()) {
            report.skip("target", "no --grant-file given: add one to open its target through the tunnel");
            return;
        }
        Map<GatewayTunnel, List<Grant>> byGateway = new LinkedHashMap<>();
        for (String grant : readGrants(report)) {
            UnverifiedGrantView view;
            try {
                view = UnverifiedGrantView.decode(grant);
            } catch (IllegalArgumentException e) {
                report.fail("target", ExitCodes.USAGE, "a line of the grant file is not a grant (the value is not "
                        + "shown)");
                continue;
            }
            GatewayTunnel gateway = ownGateways.getOrDefault(view.environment(), defaultGateway);
            byGateway.computeIfAbsent(gateway, t -> new ArrayList<>()).add(new Grant(grant, view));
        }
        byGateway.forEach((gateway, grants) -> open(report, gateway, grants));
    }

    private List<String> readGrants(DoctorReport report) {
        List<String> grants = new ArrayList<>();
        for (Path p : grantFiles) {
            try {
                grants.addAll(FileModes.valueLines(p));
            } catch (IOException e) {
                report.fail("target", ExitCodes.REFUSED, "cannot read the grant file " + p + " ("
                        + e.getClass().getSimpleName() + ")");
            }
        }
        return grants;
    }

    private void open(DoctorReport report, GatewayTunnel gateway, List<Grant> grants) {
        GatewayLabel g = gateway.label();
        if (!gateway.accepted()) {
            report.skip("target", g.environment() == null
                    ? "cannot open targets through the tunnel without a gateway that accepts the token"
                    : "cannot open the targets of environment '" + Cli.shown(g.environment()) + "' without "
                    + g.who() + " accepting its token (see the environment-gateway and environment-token checks)");
            return;
        }
        for (Grant grant : grants) {
            Authority target = new Authority(grant.view().targetHost(), grant.view().targetPort());
            Throwable failure = probe.openAndClose(gateway.connection(), target, grant.value());
            if (failure == null) {
                report.ok("target", target + " opens through the tunnel (grant " + grant.view().jti()
                        + ", environment '" + Cli.shown(grant.view().environment()) + "')");
            } else {
                reportFailure(report, target, grant.view(), failure);
            }
        }
    }

    /** The finding for a stream open that failed: what the typed refusal means for this target. */
    static void reportFailure(DoctorReport report, Authority target, UnverifiedGrantView view, Throwable failure) {
        if (failure instanceof TimeoutException) {
            report.fail("target", ExitCodes.UNREACHABLE, target + ": the gateway did not answer the stream open in "
                    + "time");
            return;
        }
        if (!(failure instanceof TunnelStreamException e)) {
            report.fail("target", ExitCodes.UNREACHABLE, target + ": " + Cli.shown(String.valueOf(failure)));
            return;
        }
        String code = e.error().code();
        String detail = Cli.shown(e.getMessage());
        switch (e.error()) {
            case TARGET_REFUSED -> report.fail("target", ExitCodes.UNREACHABLE, "nothing listens on " + target
                    + " in the environment (target_refused): start the dev server there; browsers get a 502 page "
                    + "meanwhile");
            case DIAL_TIMEOUT, TARGET_UNREACHABLE -> report.fail("target", ExitCodes.UNREACHABLE, target + " cannot "
                    + "be reached from the gateway (" + code + ", " + detail + ")");
            case GRANT_EXPIRED -> report.fail("target", ExitCodes.REFUSED, "the grant for " + target + " expired ("
                    + view.expiresAt() + "): issue a new one with 'env-gateway grant issue' and 'grant add' it");
            case GRANT_REVOKED -> report.fail("target", ExitCodes.REFUSED, "the grant for " + target + " (or its "
                    + "session) was revoked on the gateway: issue a new one");
            case POLICY_REFUSED -> report.fail("target", ExitCodes.REFUSED, "the gateway's target policy refuses "
                    + target + " (" + detail + "): only loopback targets unless serve has --allow-target");
            default -> report.fail("target", ExitCodes.REFUSED, "the gateway refused a stream to " + target + " ("
                    + code + ": " + detail + ")");
        }
    }
}
