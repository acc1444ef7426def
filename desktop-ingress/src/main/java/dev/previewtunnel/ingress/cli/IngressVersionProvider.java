package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.VersionProvider;
import dev.previewtunnel.mux.wire.MuxProtocol;

/**
 * {@code desktop-ingress <version> (tunnel protocol ptun.v1)}. The version comes from the build-filtered
 * {@code version.properties} next to this class, else from the jar manifest's Implementation-Version.
 */
public final class IngressVersionProvider extends VersionProvider {
    static final String RESOURCE = "version.properties";

    public IngressVersionProvider() {
        super("desktop-ingress", IngressVersionProvider.class, RESOURCE,
                " (tunnel protocol " + MuxProtocol.SUBPROTOCOL + ")");
    }

    static String projectVersion() {
        return VersionProvider.projectVersion(IngressVersionProvider.class, RESOURCE);
    }

    /** The commit this build came from (see {@link VersionProvider#commit}), for the build_info metric. */
    static String commit() {
        return VersionProvider.commit(IngressVersionProvider.class, RESOURCE);
    }
}
