package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.sampleapp.SampleApp;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

import java.net.Authenticator;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.PasswordAuthentication;
import java.net.ProxySelector;
import java.net.ServerSocket;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;

/**
 * A real in-process env-gateway (started with its key directory, so revocation and the Date header are as in
 * production) and a real target (the sample app), with an issuer for tokens and grants of its environment
 * ({@link #ENV} unless started for another).
 */
final class TestStack implements AutoCloseable {
    static final String ENV = "e1";
    private static final ObjectMapper JSON = new ObjectMapper();

    final String env;
    final KeyDirectory keys;
    final GrantIssuer issuer;
    final GatewayServer gateway;
    final SampleApp app;

    private TestStack(String env, KeyDirectory keys, GatewayServer gateway, SampleApp app) {
        this.env = env;
        this.keys = keys;
        this.issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        this.gateway = gateway;
        this.app = app;
    }

    static TestStack start(Path dir) throws Exception {
        return start(dir, new SimpleMeterRegistry());
    }

    static TestStack start(Path dir, MeterRegistry registry) throws Exception {
        return start(dir, registry, c -> c);
    }

    /** As above with the gateway's configuration adjusted by {@code configure} (from a 200 ms drain timeout). */
    static TestStack start(Path dir, MeterRegistry registry, java.util.function.UnaryOperator<GatewayConfig> configure)
            throws Exception {
        return start(dir, ENV, registry, configure);
    }

    /** A stack of environment {@code env} (its own keys and gateway), e.g. a second environment next to {@link #ENV}. */
    static TestStack start(Path dir, String env) throws Exception {
        return start(dir, env, new SimpleMeterRegistry(), c -> c);
    }

    private static TestStack start(Path dir, String env, MeterRegistry registry,
                                   java.util.function.UnaryOperator<GatewayConfig> configure) throws Exception {
        KeyDirectory keys = KeyDirectory.init(dir.resolve("keys"));
        GatewayConfig config = configure.apply(GatewayConfig.defaults(env, new InetSocketAddress("127.0.0.1", 0))
                .withDrainTimeout(Duration.ofMillis(200)));
        GatewayServer gateway = GatewayServer.start(config, keys.verificationKeys(), null, registry);
        return new TestStack(env, keys, gateway, SampleApp.start("127.0.0.1", 0));
    }

    String url() {
        return gateway.url(false);
    }

    String token() {
        return issuer.issueConnectionToken(env, Duration.ofHours(1));
    }

    String grant(String session, int port) {
        return issuer.issueGrant(GrantSpec.tcp(env, session, "localhost", port), Duration.ofMinutes(10));
    }

    /** An owner-only file holding {@code content}. */
    static Path secretFile(Path dir, String name, String content) throws Exception {
        Path file = dir.resolve(name);
        Files.createDirectories(dir);
        Files.deleteIfExists(file);
        Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        return Files.writeString(file, content);
    }

    static int closedPort() throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            return s.getLocalPort();
        }
    }

    /** An HTTP/1.1 client using {@code proxy} ("127.0.0.1:P") with the credentials in {@code credentialsFile}. */
    static HttpClient proxiedClient(String proxy, Path credentialsFile) throws Exception {
        JsonNode c = JSON.readTree(Files.readString(credentialsFile));
        String user = c.get("username").asText();
        String password = c.get("password").asText();
        int colon = proxy.lastIndexOf(':');
        return HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .proxy(ProxySelector.of(new InetSocketAddress(proxy.substring(0, colon),
                        Integer.parseInt(proxy.substring(colon + 1)))))
                .connectTimeout(Duration.ofSeconds(10))
                .authenticator(new Authenticator() {
                    @Override
                    protected PasswordAuthentication getPasswordAuthentication() {
                        return getRequestorType() == RequestorType.PROXY
                                ? new PasswordAuthentication(user, password.toCharArray()) : null;
                    }
                })
                .build();
    }

    @Override
    public void close() {
        app.close();
        gateway.close();
    }
}
