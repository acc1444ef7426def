package dev.previewtunnel.ingress.ssh;

import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;

/** Finds the env-gateway jar that {@code open} uploads to a remote without {@code env-gateway} on its PATH. */
public final class GatewayJar {
    static final String NAME = "env-gateway.jar";

    private GatewayJar() {
    }

    /**
     * {@code explicit} when given; else {@code env-gateway.jar} beside the running desktop-ingress jar (a release
     * ships both in one directory); else {@code env-gateway/target/env-gateway.jar} of the build tree this class was
     * loaded from. Throws {@link SshLinkException} saying where it looked.
     */
    public static Path locate(Path explicit) {
        if (explicit != null) {
            if (!Files.isRegularFile(explicit)) {
                throw new SshLinkException("the gateway jar " + explicit + " does not exist or is not a file");
            }
            return explicit;
        }
        Path here = codeLocation();
        if (here != null) {
            Path dir = Files.isRegularFile(here) ? here.getParent() : here;
            Path beside = dir.resolve(NAME);
            if (Files.isRegularFile(beside)) {
                return beside;
            }
            // desktop-ingress/target/desktop-ingress.jar or desktop-ingress/target/classes: walk up to the build root
            for (Path d = dir; d != null && dir.getNameCount() - d.getNameCount() <= 3; d = d.getParent()) {
                Path built = d.resolve("env-gateway").resolve("target").resolve(NAME);
                if (Files.isRegularFile(built)) {
                    return built;
                }
            }
        }
        throw new SshLinkException("no " + NAME + " to upload beside "
                + (here == null ? "desktop-ingress" : here) + " nor in a build tree above it: pass its path "
                + "(the release ships it next to desktop-ingress.jar; a build makes env-gateway/target/" + NAME + ")");
    }

    private static Path codeLocation() {
        try {
            CodeSource source = GatewayJar.class.getProtectionDomain().getCodeSource();
            return source == null ? null : Path.of(source.getLocation().toURI()).toAbsolutePath();
        } catch (URISyntaxException | IllegalArgumentException | SecurityException e) {
            return null;
        }
    }
}
