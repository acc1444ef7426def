package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.DoctorReport.Status;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How a failed stream open becomes the {@code target} finding: target not listening and unreachable are
 * "unreachable" (2), a grant the gateway refuses is "refused" (3), no answer is said as such.
 */
class TargetCheckTest {
    private static final Authority TARGET = new Authority("localhost", 5173);
    private static final UnverifiedGrantView VIEW = new UnverifiedGrantView("localhost", 5173, "e1", "web",
            Instant.parse("2026-12-02T03:00:00Z"), "jti-1");

    private static DoctorReport.Check finding(Throwable failure) {
        DoctorReport report = Reports.quiet();
        TargetCheck.reportFailure(report, TARGET, VIEW, failure);
        DoctorReport.Check c = Reports.only(report);
        assertEquals("target", c.id());
        assertEquals(Status.FAIL, c.status());
        return c;
    }

    @Test
    void eachTypedRefusalHasItsFindingAndExitCode() {
        DoctorReport.Check notListening = finding(new TunnelStreamException(TunnelError.TARGET_REFUSED, ""));
        assertEquals(ExitCodes.UNREACHABLE, notListening.exitCode());
        assertEquals("nothing listens on localhost:5173 in the environment (target_refused): start the dev server "
                + "there; browsers get a 502 page meanwhile", notListening.message());

        DoctorReport.Check expired = finding(new TunnelStreamException(TunnelError.GRANT_EXPIRED, ""));
        assertEquals(ExitCodes.REFUSED, expired.exitCode());
        assertTrue(expired.message().startsWith("the grant for localhost:5173 expired (2026-12-02T03:00:00Z)"),
                expired.message());

        DoctorReport.Check revoked = finding(new TunnelStreamException(TunnelError.GRANT_REVOKED, ""));
        assertTrue(revoked.message().contains("was revoked on the gateway"), revoked.message());

        DoctorReport.Check policy = finding(new TunnelStreamException(TunnelError.POLICY_REFUSED, "policy_private"));
        assertTrue(policy.message().contains("target policy refuses localhost:5173"), policy.message());

        DoctorReport.Check other = finding(new TunnelStreamException(TunnelError.GRANT_REFUSED, "grant_bad_signature"));
        assertEquals(ExitCodes.REFUSED, other.exitCode());
        assertEquals("the gateway refused a stream to localhost:5173 (grant_refused: grant_refused: "
                + "grant_bad_signature)", other.message());
    }

    @Test
    void noAnswerAndAnUntypedFailureAreUnreachable() {
        DoctorReport.Check timeout = finding(new TimeoutException("no answer"));
        assertEquals(ExitCodes.UNREACHABLE, timeout.exitCode());
        assertEquals("localhost:5173: the gateway did not answer the stream open in time", timeout.message());
        assertEquals(ExitCodes.UNREACHABLE, finding(new IllegalStateException("closed")).exitCode());
    }

    @Test
    void withoutGrantFilesNothingIsOpened() {
        DoctorReport report = Reports.quiet();
        new TargetCheck(List.of(), new GatewayTunnel(GatewayLabel.DEFAULT, null), Map.of(), null).run(report);
        DoctorReport.Check c = Reports.only(report);
        assertEquals(Status.SKIP, c.status());
        assertTrue(c.message().startsWith("no --grant-file given"), c.message());
    }

    /**
     * Grants go to their environment's own gateway, else the default one; a gateway that did not accept the token
     * gets its grants skipped with the reason, and they are not tried through another gateway.
     */
    @Test
    void grantsOfAGatewayThatRefusedTheTokenAreSkippedNotSentElsewhere(@TempDir Path tmp) throws Exception {
        GrantIssuer issuer = new GrantIssuer(KeyDirectory.init(tmp.resolve("keys")).signingKey(), Clock.systemUTC());
        Path grants = Files.writeString(tmp.resolve("grants"), "# two grants\n"
                + issuer.issueGrant(GrantSpec.tcp("e1", "web", "localhost", 5173), Duration.ofMinutes(5)) + "\n"
                + issuer.issueGrant(GrantSpec.tcp("staging", "web", "localhost", 5174), Duration.ofMinutes(5)) + "\n");
        DoctorReport report = Reports.quiet();
        new TargetCheck(List.of(grants), new GatewayTunnel(GatewayLabel.DEFAULT, null),
                Map.of("staging", new GatewayTunnel(new GatewayLabel("staging"), null)), null).run(report);
        List<DoctorReport.Check> checks = report.checks();
        assertEquals(2, checks.size(), checks::toString);
        assertEquals("cannot open targets through the tunnel without a gateway that accepts the token",
                checks.get(0).message());
        assertTrue(checks.get(1).message().startsWith("cannot open the targets of environment 'staging' without the "
                + "gateway of environment 'staging' accepting its token"), checks.get(1).message());
        assertTrue(checks.stream().allMatch(c -> c.status() == Status.SKIP), checks::toString);
    }
}
