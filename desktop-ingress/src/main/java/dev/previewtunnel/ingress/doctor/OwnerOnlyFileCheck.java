package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.FileModes;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One file 'run' reads a secret or its trust from is the user's alone: a token, grant or refresh token others can
 * read is theirs to use (owner-only). A CA certificate is public, so it may be readable, but one others can write
 * lets them impersonate the gateway. A file that does not exist is left to the check that reads it.
 *
 * @param check  the check's id ({@code token-file}, {@code gateway-ca}, ...)
 * @param secret true for a secret (no access by others), false for a trust file (no writing by others)
 * @param holds  what the file holds and what others could do with it, for the failure's message
 */
public record OwnerOnlyFileCheck(String check, Path file, boolean secret, String holds) {

    /**
     * The checks of the files 'run' reads, in the order they are reported: the token, each environment's token,
     * the grants, the gateway CA and the grant refresh token. Null paths are not given and not checked.
     */
    public static List<OwnerOnlyFileCheck> ofRun(Path token, Map<String, TunnelChecks.OwnGateway> ownGateways,
                                                 List<Path> grants,
                                                 Path ca, Path refreshToken) {
        List<OwnerOnlyFileCheck> checks = new ArrayList<>();
        checks.add(new OwnerOnlyFileCheck("token-file", token, true, "the connection token: anyone on this machine "
                + "could open tunnel connections to the environment with it"));
        ownGateways.forEach((environment, own) -> checks.add(new OwnerOnlyFileCheck("environment-token-file",
                own.tokenFile(), true, "the connection token of the gateway of environment '" + Cli.shown(environment) + "' "
                + "(--environment-token-file): anyone on this machine could open tunnel connections to that "
                + "environment with it")));
        for (Path grant : grants) {
            checks.add(new OwnerOnlyFileCheck("grant-file", grant, true, "grants: anyone on this machine could open "
                    + "their targets with them"));
        }
        checks.add(new OwnerOnlyFileCheck("gateway-ca", ca, false, "the CA that authenticates the gateway: whoever "
                + "can change it can impersonate the gateway and read the tunnel's traffic"));
        checks.add(new OwnerOnlyFileCheck("grant-refresh-token-file", refreshToken, true, "the bearer token of "
                + "--grant-refresh-url: anyone on this machine could fetch fresh grants with it"));
        return checks;
    }

    public void run(DoctorReport report) {
        if (file == null || !Files.isRegularFile(file)) {
            return;
        }
        if (secret ? FileModes.shared(file) : FileModes.writableByOthers(file)) {
            report.fail(check, ExitCodes.REFUSED, file + " is " + (secret ? "accessible" : "writable")
                    + " by group/others (" + FileModes.perms(file) + "); it holds " + holds + ": chmod 600 " + file);
        } else {
            report.ok(check, file + (secret ? " is owner-only (" : " is not writable by others (")
                    + FileModes.perms(file) + ")");
        }
    }
}
