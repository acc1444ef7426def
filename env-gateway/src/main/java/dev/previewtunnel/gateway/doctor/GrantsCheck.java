package dev.previewtunnel.gateway.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.grants.GrantException;
import dev.previewtunnel.grants.GrantVerifier;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.grants.VerifiedGrant;
import dev.previewtunnel.mux.wire.Authority;

import java.nio.file.Path;
import java.util.List;

/**
 * {@code grant}: each grant in --grant-file verifies for the environment and for the target it names, as serve
 * checks it at stream open. A line is named by its number, never by its value.
 */
public record GrantsCheck(Path grantFile, GrantVerifier verifier, String environment) {

    public void run(DoctorReport report) {
        List<String> grants = ValueFile.lines(report, "grant", grantFile);
        for (int i = 0; i < grants.size(); i++) {
            String where = "line " + (i + 1) + " of " + grantFile;
            UnverifiedGrantView view;
            try {
                view = UnverifiedGrantView.decode(grants.get(i));
            } catch (IllegalArgumentException e) {
                report.fail("grant", ExitCodes.USAGE, where + " is not a grant");
                continue;
            }
            String authority = new Authority(view.targetHost(), view.targetPort()).toString();
            try {
                VerifiedGrant verified = verifier.verifyGrant(grants.get(i), environment, authority);
                report.ok("grant", where + ": grant " + verified.jti() + " for " + authority + " verifies, expires "
                        + verified.expiresAt());
            } catch (GrantException e) {
                report.fail("grant", ExitCodes.REFUSED, where + ": grant for " + authority + " does not verify ("
                        + e.failure().code() + "): issue a new one with 'env-gateway grant issue'");
            }
        }
    }
}
