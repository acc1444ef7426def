package dev.previewtunnel.cli;

import picocli.CommandLine.IVersionProvider;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * {@code <program> <version><suffix>}, e.g. {@code env-gateway 0.1.0 (tunnel protocol ptun.v1)}. The version
 * comes from a build-filtered properties resource ({@code version=${project.version}}) looked up relative to an
 * anchor class, else from the anchor's jar manifest (Implementation-Version), else "unknown".
 *
 * <p>picocli instantiates version providers itself, so each program subclasses this with a no-argument
 * constructor.
 */
public abstract class VersionProvider implements IVersionProvider {
    public static final String UNKNOWN = "unknown";

    private final String program;
    private final Class<?> anchor;
    private final String resource;
    private final String suffix;

    /**
     * @param resource resource name relative to {@code anchor} (as {@link Class#getResourceAsStream}), or null to
     *                 use the manifest only
     * @param suffix   appended to the version, e.g. {@code " (tunnel protocol ptun.v1)"}; may be empty
     */
    protected VersionProvider(String program, Class<?> anchor, String resource, String suffix) {
        this.program = program;
        this.anchor = anchor;
        this.resource = resource;
        this.suffix = suffix;
    }

    @Override
    public String[] getVersion() {
        return new String[] {program + " " + projectVersion(anchor, resource) + suffix};
    }

    /** The version as described in the class comment; never null. */
    public static String projectVersion(Class<?> anchor, String resource) {
        String v = filtered(anchor, resource, "version");
        if (v != null) {
            return v;
        }
        Package pkg = anchor.getPackage();
        v = pkg == null ? null : pkg.getImplementationVersion();
        return v == null || v.isBlank() ? UNKNOWN : v;
    }

    /**
     * The commit the program was built from ({@code commit} in the same resource, set by the build from
     * {@code git describe}: an abbreviated hash, {@code -dirty} for a modified tree), else "unknown"; never null.
     */
    public static String commit(Class<?> anchor, String resource) {
        String c = filtered(anchor, resource, "commit");
        return c == null ? UNKNOWN : c;
    }

    /** {@code key} of the build-filtered resource; null if missing, blank or left unfiltered ({@code ${...}}). */
    private static String filtered(Class<?> anchor, String resource, String key) {
        if (resource == null) {
            return null;
        }
        try (InputStream in = anchor.getResourceAsStream(resource)) {
            if (in != null) {
                Properties p = new Properties();
                p.load(in);
                String v = p.getProperty(key);
                if (v != null && !v.isBlank() && !v.startsWith("${")) {
                    return v.trim();
                }
            }
        } catch (IOException e) {
            // as if missing
        }
        return null;
    }
}
