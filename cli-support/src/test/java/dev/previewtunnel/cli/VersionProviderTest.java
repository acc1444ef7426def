package dev.previewtunnel.cli;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

class VersionProviderTest {
    static final class Good extends VersionProvider {
        Good() {
            super("tool", VersionProviderTest.class, "good-version.properties", " (protocol p1)");
        }
    }

    @Test
    void readsTheFilteredResourceNextToTheAnchor() {
        assertArrayEquals(new String[] {"tool 1.2.3 (protocol p1)"}, new Good().getVersion());
        assertEquals("1.2.3", VersionProvider.projectVersion(VersionProviderTest.class, "good-version.properties"));
    }

    @Test
    void unfilteredOrMissingResourceFallsBackToTheManifestThenUnknown() {
        // Test classes come from a directory: no manifest, so no Implementation-Version.
        assertEquals(VersionProvider.UNKNOWN,
                VersionProvider.projectVersion(VersionProviderTest.class, "unfiltered-version.properties"));
        assertEquals(VersionProvider.UNKNOWN,
                VersionProvider.projectVersion(VersionProviderTest.class, "missing.properties"));
        assertEquals(VersionProvider.UNKNOWN, VersionProvider.projectVersion(VersionProviderTest.class, null));
    }

    @Test
    void theCommitComesFromTheSameResourceElseUnknown() {
        assertEquals("09eddf2abcde-dirty", VersionProvider.commit(VersionProviderTest.class, "good-version.properties"));
        // The build leaves "${ptun.commit}" where git is missing: that is unknown, never the placeholder.
        assertEquals(VersionProvider.UNKNOWN,
                VersionProvider.commit(VersionProviderTest.class, "unfiltered-version.properties"));
        assertEquals(VersionProvider.UNKNOWN, VersionProvider.commit(VersionProviderTest.class, "missing.properties"));
    }

    @Test
    void readsImplementationVersionFromAJarManifest() {
        // picocli's own jar declares Implementation-Version in its manifest.
        String v = VersionProvider.projectVersion(picocli.CommandLine.class, null);
        assertEquals(picocli.CommandLine.VERSION, v);
    }
}
