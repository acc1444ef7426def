package dev.previewtunnel.gateway.doctor;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.grants.GrantException;
import dev.previewtunnel.grants.GrantVerifier;
import dev.previewtunnel.grants.VerifiedToken;

import java.nio.file.Path;
import java.util.List;

/** {@code token}: the connection token in --token-file verifies for the environment with these keys. */
public record TokenCheck(Path tokenFile, GrantVerifier verifier, String environment) {

    public void run(DoctorReport report) {
        List<String> lines = ValueFile.lines(report, "token", tokenFile);
        if (lines.isEmpty()) {
            return;
        }
        try {
            VerifiedToken verified = verifier.verifyConnectionToken(lines.get(0), environment);
            report.ok("token", "token verifies for '" + Cli.shown(environment) + "' with kid " + verified.kid()
                    + ", expires " + verified.expiresAt());
        } catch (GrantException e) {
            report.fail("token", ExitCodes.REFUSED, "the token in " + tokenFile + " does not verify ("
                    + e.failure().code() + "): issue one with 'env-gateway token issue --keys DIR --env "
                    + Cli.shown(environment) + "'");
        }
    }
}
