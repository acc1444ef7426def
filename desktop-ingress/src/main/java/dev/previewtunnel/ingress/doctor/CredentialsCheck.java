package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.FileModes;
import dev.previewtunnel.ingress.control.ControlServer;
import dev.previewtunnel.ingress.session.SessionStore;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code credentials}: the files with secrets in the state directory (sessions' proxy credentials, the control
 * API's token, the sessions' saved grants) are owner-only: anyone who can read one can use what it holds.
 */
public final class CredentialsCheck {
    private final Path dir;

    public CredentialsCheck(Path dir) {
        this.dir = dir;
    }

    public void run(DoctorReport report) {
        List<Path> secrets = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "session-*.credentials.json")) {
            files.forEach(secrets::add);
        } catch (IOException e) {
            report.fail("credentials", ExitCodes.REFUSED, "cannot list " + dir + " (" + e.getClass().getSimpleName()
                    + "): run doctor as the user that runs the ingress");
            return;
        }
        Path control = dir.resolve(ControlServer.STATE_FILE);
        if (Files.exists(control)) {
            secrets.add(control);
        }
        Path saved = dir.resolve(SessionStore.FILE); // the sessions' grants, kept across restarts
        if (Files.exists(saved)) {
            secrets.add(saved);
        }
        if (secrets.isEmpty()) {
            report.skip("credentials", "no credentials files in " + dir + " (no ingress has run with it)");
            return;
        }
        boolean bad = false;
        for (Path f : secrets) {
            if (FileModes.shared(f)) {
                bad = true;
                report.fail("credentials", ExitCodes.REFUSED, f + " is readable by group/others ("
                        + FileModes.perms(f) + "): anyone on this machine could use " + (f.equals(control)
                        ? "the control API" : f.equals(saved) ? "the grants it holds"
                        : "that session's access to the environment") + "; chmod 600 " + f);
            }
        }
        if (!bad) {
            report.ok("credentials", secrets.size() + " file(s) with secrets in " + dir
                    + ", all owner-only (rw-------)");
        }
    }
}
