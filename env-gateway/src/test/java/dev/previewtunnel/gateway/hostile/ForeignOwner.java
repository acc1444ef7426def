package dev.previewtunnel.gateway.hostile;

import org.junit.jupiter.api.Assumptions;

/**
 * A uid that is not ours, for "owned by someone else". Changing a file's owner needs root, which these tests run
 * as; as another user the foreign-owner cases are skipped (reported as such), never passed silently.
 */
final class ForeignOwner {
    private ForeignOwner() {
    }

    static int uid() {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")),
                "chown to another uid needs root");
        return 54321;
    }
}
