package dev.previewtunnel.gateway.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.TrustedPaths;
import dev.previewtunnel.cli.UnixSocketFile;
import dev.previewtunnel.local.net.UnixSocketPath;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * {@code listen} for {@code --listen unix:PATH}: what serve would find there (UnixSocketFile), without creating,
 * replacing or binding anything. Nothing listens on the network then, so there is no exposure to report.
 *
 * @param socket --listen's socket
 */
record UnixListenCheck(UnixSocketPath socket) {

    void run(DoctorReport report) {
        Path dir = socket.path().getParent();
        try {
            if (!Files.isDirectory(dir)) {
                report.ok("listen", "unix socket " + socket + ": its directory does not exist yet, serve creates it "
                        + "rwx------");
                return;
            }
            TrustedPaths.requireTrustedDirectory(dir, "socket directory");
            switch (UnixSocketFile.probe(socket.path())) {
                case ABSENT -> report.ok("listen", "unix socket " + socket + " is free: serve can bind it (nothing "
                        + "listens on the network)");
                case STALE -> report.ok("listen", "unix socket " + socket + " is a stale file nothing answers on: "
                        + "serve replaces it");
                case LIVE -> report.warn("listen", "a process already answers on unix socket " + socket
                        + ": fine if it is this gateway's serve, else serve would refuse to start there (exit 2)");
                case NOT_A_SOCKET -> report.fail("listen", ExitCodes.REFUSED, socket.path() + " exists and is not "
                        + "a socket: remove it or pick another --listen path");
            }
        } catch (TrustedPaths.UntrustedException e) {
            report.fail("listen", ExitCodes.REFUSED, e.getMessage());
        } catch (IOException e) {
            report.fail("listen", ExitCodes.REFUSED, "cannot examine unix socket " + socket + " ("
                    + e.getClass().getSimpleName() + ")");
        }
    }
}
