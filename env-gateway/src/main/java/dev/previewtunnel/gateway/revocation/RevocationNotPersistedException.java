package dev.previewtunnel.gateway.revocation;

import java.io.IOException;
import java.nio.file.Path;

/** A revocation in force in this process that could not be written to the state directory. */
public final class RevocationNotPersistedException extends IllegalStateException {
    RevocationNotPersistedException(Path file, IOException cause) {
        super("revoked, but could not write " + file + " (" + cause.getClass().getSimpleName()
                + "): the revocation holds until this gateway restarts");
    }
}
