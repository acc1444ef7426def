package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.mux.MuxProtocol;
import picocli.CommandLine.IVersionProvider;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * {@code env-gateway <version> (tunnel protocol ptun.v1)}. The version comes from the build-filtered
 * {@code version.properties} next to this class, else from the jar manifest's Implementation-Version.
 */
public final class VersionProvider implements IVersionProvider {
    private static final String UNKNOWN = "unknown";

    @Override
    public String[] getVersion() {
        return new String[] {"env-gateway " + projectVersion() + " (tunnel protocol " + MuxProtocol.SUBPROTOCOL + ")"};
    }

    static String projectVersion() {
        try (InputStream in = VersionProvider.class.getResourceAsStream("version.properties")) {
            if (in != null) {
                Properties p = new Properties();
                p.load(in);
                String v = p.getProperty("version");
                if (v != null && !v.isBlank() && !v.startsWith("${")) {
                    return v.trim();
                }
            }
        } catch (IOException e) {
            // fall through to the manifest
        }
        String v = VersionProvider.class.getPackage().getImplementationVersion();
        return v == null || v.isBlank() ? UNKNOWN : v;
    }
}
