package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.VersionProvider;
import dev.previewtunnel.mux.wire.MuxProtocol;

/**
 * {@code env-gateway <version> (tunnel protocol ptun.v1)}. The version comes from the build-filtered
 * {@code version.properties} next to this class, else from the jar manifest's Implementation-Version.
 */
public final class GatewayVersionProvider extends VersionProvider {
    static final String RESOURCE = "version.properties";

    public GatewayVersionProvider() {
        super("env-gateway", GatewayVersionProvider.class, RESOURCE,
                " (tunnel protocol " + MuxProtocol.SUBPROTOCOL + ")");
    }

    static String projectVersion() {
        return VersionProvider.projectVersion(GatewayVersionProvider.class, RESOURCE);
    }

    /** The commit this build came from (see {@link VersionProvider#commit}), for the build_info metric. */
    static String commit() {
        return VersionProvider.commit(GatewayVersionProvider.class, RESOURCE);
    }
}
