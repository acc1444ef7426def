package dev.previewtunnel.ingress.ssh;

import java.nio.file.Path;

/**
 * What runs on the remote: {@code remoteJava} ({@code --remote-java}; null: {@code java} from the remote PATH),
 * {@code remoteGateway} ({@code --remote-gateway COMMAND}, a shell command line; null: {@code env-gateway} from the
 * remote PATH unless {@code remoteJava} is given, else the uploaded jar), the local {@code gatewayJar} to upload
 * ({@link GatewayJar#locate}), the {@code version} naming the remote cache directory, and the gateway's
 * {@code --env}.
 */
public record RemoteSetup(String remoteJava, String remoteGateway, Path gatewayJar, String version,
                          String environment) {
    public RemoteSetup {
        if (version == null || !version.matches("[A-Za-z0-9._+-]{1,64}")) {
            throw new IllegalArgumentException("version must be letters, digits and . _ + -, got '" + version + "'");
        }
        if (environment == null || environment.isBlank()) {
            throw new IllegalArgumentException("environment must not be empty");
        }
    }
}
