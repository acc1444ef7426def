package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.FileModes;

import java.nio.file.Files;
import java.nio.file.Path;

/** {@code state-dir}: the directory 'run' keeps its state in exists and is the user's alone. */
public final class StateDirCheck {
    private final Path dir;

    public StateDirCheck(Path dir) {
        this.dir = dir;
    }

    /** Reports the check; true when the directory exists (so the files in it can be checked). */
    public boolean run(DoctorReport report) {
        if (!Files.isDirectory(dir)) {
            report.warn("state-dir", "state directory " + dir + " does not exist yet ('run' creates it, rwx------); "
                    + "if an ingress runs with another one, give it with --state-dir");
            return false;
        }
        if (FileModes.shared(dir)) {
            report.warn("state-dir", "state directory " + dir + " is accessible by group/others ("
                    + FileModes.perms(dir) + "): chmod 700 " + dir);
        } else {
            report.ok("state-dir", dir + " exists (" + FileModes.perms(dir) + ")");
        }
        return true;
    }
}
