package dev.previewtunnel.gateway.doctor;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.gateway.policy.Cidr;
import dev.previewtunnel.gateway.policy.PolicyException;
import dev.previewtunnel.gateway.policy.TargetPolicy;
import dev.previewtunnel.mux.wire.Authority;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.List;

/**
 * {@code target}: each --target is allowed by the target policy serve would apply (loopback, plus --allow-target)
 * and something accepts connections there, dialed at the addresses the policy resolved and checked, as serve dials
 * them (docs/security.md, loopback-only targets).
 */
public record TargetReachCheck(List<String> targets, List<Cidr> allowed, Duration timeout) {

    public void run(DoctorReport report) {
        if (targets.isEmpty()) {
            report.skip("target", "no --target given: add e.g. --target localhost:5173 to check a dev server");
            return;
        }
        TargetPolicy policy = allowed.isEmpty() ? TargetPolicy.loopbackOnly() : TargetPolicy.loopbackPlus(allowed);
        for (String text : targets) {
            Authority target;
            try {
                target = Authority.parse(text);
            } catch (IllegalArgumentException e) {
                report.fail("target", ExitCodes.USAGE, "target '" + Cli.shown(text) + "' is not HOST:PORT");
                continue;
            }
            List<InetAddress> addresses;
            try {
                addresses = policy.resolve(target.host());
            } catch (PolicyException e) {
                report.fail("target", ExitCodes.REFUSED, target + " is refused by the target policy (" + e.code()
                        + "): grants for it would fail with policy_refused; only loopback targets are allowed "
                        + "unless serve has --allow-target for their network");
                continue;
            }
            dial(report, target, addresses);
        }
    }

    private void dial(DoctorReport report, Authority target, List<InetAddress> addresses) {
        String failure = null;
        for (InetAddress a : addresses) {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(a, target.port()), (int) timeout.toMillis());
                report.ok("target", target + " accepts connections (" + Cli.hostPort(new InetSocketAddress(a,
                        target.port())) + ")");
                return;
            } catch (SocketTimeoutException e) {
                failure = "timed out";
            } catch (IOException e) {
                failure = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
            }
        }
        if (failure != null) {
            report.fail("target", ExitCodes.UNREACHABLE, "nothing listens on " + target + " (" + failure
                    + "): start the dev server there (browsers would get target_refused, 502); a server bound "
                    + "to ::1 only is not reached through 127.0.0.1, and the other way round");
        }
    }
}
