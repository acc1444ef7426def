package dev.previewtunnel.gateway.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.FileModes;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/** The tokens or grants in a file, one per line; a file that cannot be read fails the check that reads it. */
final class ValueFile {
    private ValueFile() {
    }

    static List<String> lines(DoctorReport report, String check, Path file) {
        try {
            return FileModes.valueLines(file);
        } catch (IOException e) {
            report.fail(check, ExitCodes.REFUSED, "cannot read " + file + " (" + e.getClass().getSimpleName() + ")");
            return List.of();
        }
    }
}
