package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.FileModes;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/** {@code token} / {@code environment-token}, first part: the token file holds one token that can be read. */
public final class TokenFile {
    private TokenFile() {
    }

    /** The token, or null when the file cannot be used (reported as the gateway's token check). */
    public static String read(DoctorReport report, GatewayLabel gateway, Path file) {
        String check = gateway.check("token");
        String of = gateway.environment() == null ? "" : " (the token of " + gateway.who() + ")";
        try {
            List<String> lines = FileModes.valueLines(file);
            if (lines.size() != 1) {
                report.fail(check, ExitCodes.USAGE, file + of + " must hold the token on one line, found "
                        + lines.size());
                return null;
            }
            return lines.get(0);
        } catch (IOException e) {
            report.fail(check, ExitCodes.REFUSED, "cannot read the token file " + file + of + " ("
                    + e.getClass().getSimpleName() + ")");
            return null;
        }
    }
}
