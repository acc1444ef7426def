package dev.previewtunnel.testing;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/**
 * A uid that is not ours, for "owned by someone else" cases. Giving a file to another uid needs root, which CI
 * runs as: under CI ({@code CI=true}) a run without root fails; elsewhere the case is skipped, and reported so.
 */
public final class ForeignOwner {
    private static final int UID = 54321;

    private ForeignOwner() {
    }

    /** The foreign uid, once it is certain this run may chown to it. */
    public static int uid() {
        boolean root = "root".equals(System.getProperty("user.name"));
        if ("true".equalsIgnoreCase(System.getenv("CI"))) {
            Assertions.assertTrue(root, "CI must run as root: the foreign-owner cases chown to another uid");
        } else {
            Assumptions.assumeTrue(root, "chown to another uid needs root");
        }
        return UID;
    }
}
