package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.mux.wire.MuxProtocol;
import dev.previewtunnel.mux.client.TunnelConnectException;
import dev.previewtunnel.mux.client.TunnelProbe;
import dev.previewtunnel.mux.client.UpgradeAnswer;
import io.netty.handler.ssl.SslContext;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * {@code gateway} / {@code environment-gateway}: the gateway answers a tunnel upgrade as 'run' makes it (through
 * {@link TunnelProbe}, the real client); then its clock ({@link ClockSkewCheck}) and whether it accepts the token
 * ({@code token} / {@code environment-token}). Each failure says where it stopped: TCP, TLS, the path, the
 * protocol version, the token.
 */
public final class GatewayCheck {
    private final GatewayLabel gateway;
    private final URI uri;
    private final String token;
    private final Path tokenPath;
    private final Supplier<SslContext> tls;
    private final TunnelProbe probe;
    private final Duration timeout;

    /**
     * @param token     the token read from {@code tokenPath}, or null (none given, or its file was unusable)
     * @param tls       the client TLS context for a wss:// gateway; may throw a runtime exception saying why not
     */
    public GatewayCheck(GatewayLabel gateway, URI uri, String token, Path tokenPath, Supplier<SslContext> tls,
                        TunnelProbe probe, Duration timeout) {
        this.gateway = gateway;
        this.uri = uri;
        this.token = token;
        this.tokenPath = tokenPath;
        this.tls = tls;
        this.probe = probe;
        this.timeout = timeout;
    }

    /** Reports the checks; returns the tunnel the gateway accepted, if it did. */
    public GatewayTunnel run(DoctorReport report) {
        boolean secure = "wss".equals(uri.getScheme());
        int port = uri.getPort() > 0 ? uri.getPort() : (secure ? 443 : 80);
        String hostPort = uri.getHost() + ":" + port;
        String path = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath();
        String check = gateway.check("gateway");
        GatewayTunnel refused = new GatewayTunnel(gateway, null);
        SslContext ssl = null;
        if (secure) {
            try {
                ssl = tls.get();
            } catch (RuntimeException e) {
                report.fail(check, ExitCodes.REFUSED, "cannot set up TLS for " + gateway.who() + " at " + hostPort
                        + ": " + Cli.shown(e.getMessage()));
                return refused;
            }
        }
        TunnelProbe.Dial dial = probe.dial(uri, token, ssl);
        UpgradeAnswer answer = dial.answer();
        if (answer == null) {
            reportNoAnswer(report, check, dial.failure(), hostPort, port);
            return refused;
        }
        String of = gateway.environment() == null ? "" : " (" + gateway.who() + ")";
        String reachable = gateway.who().substring("the ".length()) + " at " + hostPort + path + " reachable, speaks "
                + MuxProtocol.SUBPROTOCOL;
        switch (answer.status()) {
            case 101, 401 -> report.ok(check, reachable);
            case 404 -> report.fail(check, ExitCodes.REFUSED, "no tunnel endpoint at path " + path + " on "
                    + hostPort + of + ": use the url printed in env-gateway's ready line (its --path, default "
                    + MuxProtocol.DEFAULT_PATH + ")");
            case 426 -> report.fail(check, ExitCodes.REFUSED, "protocol_version_mismatch".equals(answer.error())
                    ? gateway.who() + " speaks another tunnel protocol version (" + Cli.shown(answer.message())
                    + "): upgrade the older side (this build speaks " + MuxProtocol.SUBPROTOCOL + ")"
                    : hostPort + path + of + " refused the WebSocket upgrade (" + Cli.shown(answer.message()) + ")");
            default -> report.fail(check, ExitCodes.REFUSED, hostPort + of + " answered HTTP " + answer.status()
                    + " to a tunnel upgrade: it is not a preview-tunnel gateway (wrong port or forward?)");
        }
        new ClockSkewCheck(gateway, answer.date(), dial.answeredAt()).run(report);
        if (answer.status() != 101 && answer.status() != 401) {
            return refused;
        }
        if (token == null) {
            if (tokenPath == null) {
                report.skip(gateway.check("token"), "no token given (" + gateway.tokenSetting() + "): cannot check "
                        + "it is accepted");
            } // else its file could not be read, which is reported already
            return refused;
        }
        if (dial.accepted()) {
            report.ok(gateway.check("token"), gateway.who() + " accepted the connection token"
                    + TokenAdvice.describe(token));
            return new GatewayTunnel(gateway, dial.connection());
        }
        report.fail(gateway.check("token"), ExitCodes.REFUSED,
                TokenAdvice.forRefusal(gateway, answer.message(), token, tokenPath));
        return refused;
    }

    /** The dial ended before the gateway answered the upgrade: say at which step and what to look at. */
    private void reportNoAnswer(DoctorReport report, String check, TunnelConnectException e, String hostPort,
                                int port) {
        String message = e.getMessage() == null ? "" : e.getMessage();
        String prefix = "cannot reach gateway " + hostPort + ": "; // the client's wording; here the place is said
        String why = Cli.shown(message.startsWith(prefix) ? message.substring(prefix.length()) : message);
        switch (e.reason()) {
            case UNREACHABLE -> report.fail(check, ExitCodes.UNREACHABLE, "cannot reach " + gateway.who() + " at "
                    + hostPort + " (" + why + "): is 'env-gateway serve' running there, and is the tunnel to it up "
                    + "(e.g. ssh -N -L " + port + ":127.0.0.1:" + port + " ENV_HOST)?");
            case NO_ANSWER -> report.fail(check, ExitCodes.UNREACHABLE, gateway.who() + " at " + hostPort
                    + " did not answer within " + timeout.toSeconds() + " s: a firewall, or a forward to the wrong "
                    + "port?");
            case TLS_FAILED -> report.fail(check, ExitCodes.REFUSED, "TLS with " + gateway.who() + " at " + hostPort
                    + " failed (" + why + "): trust its CA with --gateway-ca PEM, and check its certificate names "
                    + uri.getHost());
            default -> report.fail(check, ExitCodes.UNREACHABLE, "cannot talk to " + gateway.who() + " at "
                    + hostPort + " (" + why + ")");
        }
    }
}
