package dev.previewtunnel.ingress.doctor;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.ingress.control.ControlServer;
import dev.previewtunnel.mux.local.JvmDefaults;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * {@code proxy}: an ingress runs with this state directory and its proxy answers like desktop-ingress's; with it,
 * {@code tunnel} and {@code environment-tunnel} warn about pools that are reconnecting. An ingress started with
 * --no-control writes no control.json, so only the proxy given with --proxy can be observed.
 */
public final class RunningIngressCheck {
    private final Path dir;
    private final String proxyAddress;
    private final Supplier<JsonNode> status;
    private final Duration timeout;

    /**
     * @param proxyAddress --proxy, or null
     * @param status       the running ingress's {@code /v1/status}; throws {@link CliException} when it cannot be had
     */
    public RunningIngressCheck(Path dir, String proxyAddress, Supplier<JsonNode> status, Duration timeout) {
        this.dir = dir;
        this.proxyAddress = proxyAddress;
        this.status = status;
        this.timeout = timeout;
    }

    /** Reports the checks; returns the running ingress's status, or null. */
    public JsonNode run(DoctorReport report) {
        if (!Files.exists(dir.resolve(ControlServer.STATE_FILE))) {
            checkProxyWithoutControl(report);
            return null;
        }
        JsonNode running;
        try {
            running = status.get();
        } catch (CliException e) {
            report.fail("proxy", e.exitCode(), e.getMessage());
            return null;
        }
        String proxy = running.path("proxy").asText();
        String answer = ProxyProbe.check(proxy, timeout);
        JsonNode tunnel = running.path("tunnel");
        String tunnelState = tunnel.path("state").asText() + " " + tunnel.path("connected").asInt() + "/"
                + tunnel.path("size").asInt();
        if (answer == null) {
            report.ok("proxy", "ingress running: proxy " + proxy + " answers (407 without a session credential), "
                    + "tunnel " + tunnelState + "; browsers: --proxy-server=http://" + proxy
                    + " --proxy-bypass-list='<-loopback>'");
        } else {
            report.fail("proxy", ExitCodes.UNREACHABLE, "the ingress's control API answers but its proxy " + proxy
                    + " does not behave: " + answer);
        }
        if (running.hasNonNull("jvm")) {
            report.ok("jvm", "the running ingress's JVM: " + running.get("jvm").asText() + "; to change them, "
                    + JvmDefaults.OPTIONS_ENV + " for the package's launcher (appended last, e.g. -Xmx128m), or the "
                    + "java line (docs/operations.md, \"Memory and JVM defaults\")");
        }
        if (!"connected".equals(tunnel.path("state").asText())) {
            report.warn("tunnel", "the running ingress is reconnecting to the gateway" + reconnectingDetail(tunnel)
                    + "; browsers get 502 gateway_unreachable meanwhile; see the gateway checks below");
        }
        running.path("environments").fields().forEachRemaining(e -> {
            JsonNode own = e.getValue().path("tunnel");
            if (!"connected".equals(own.path("state").asText())) {
                report.warn("environment-tunnel", "the running ingress is reconnecting to the gateway of environment '"
                        + Cli.shown(e.getKey()) + "'" + reconnectingDetail(own) + "; that environment's browser "
                        + "requests get 502 gateway_unreachable meanwhile; see the environment-gateway checks below");
            }
        });
        return running;
    }

    private void checkProxyWithoutControl(DoctorReport report) {
        if (proxyAddress == null) {
            report.fail("proxy", ExitCodes.UNREACHABLE, "no desktop-ingress is running with state directory "
                    + dir + " (no control.json): start one with 'desktop-ingress run --gateway URL --token-file "
                    + "FILE' (for one started with --no-control, give its proxy with --proxy HOST:PORT)");
            return;
        }
        String answer = ProxyProbe.check(proxyAddress, timeout);
        if (answer == null) {
            report.ok("proxy", "proxy " + proxyAddress + " answers like desktop-ingress (407 without a session "
                    + "credential); browsers: --proxy-server=http://" + proxyAddress
                    + " --proxy-bypass-list='<-loopback>'");
        } else {
            report.fail("proxy", ExitCodes.UNREACHABLE, "no desktop-ingress proxy at " + proxyAddress + ": "
                    + answer + "; start it, or give the proxy address of its ready line");
        }
    }

    /** " since T (last error: E)" from a status {@code tunnel} object, each part only when present. */
    private static String reconnectingDetail(JsonNode tunnel) {
        return (tunnel.has("reconnectingSince") ? " since " + tunnel.get("reconnectingSince").asText() : "")
                + (tunnel.has("lastError") ? " (last error: " + Cli.shown(tunnel.get("lastError").asText()) + ")"
                : "");
    }
}
