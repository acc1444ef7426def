package dev.previewtunnel.spikes.e2e;

import dev.previewtunnel.spikes.lab.Nginx;
import dev.previewtunnel.spikes.lab.Processes;
import dev.previewtunnel.spikes.lab.SelfSignedCertificate;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The lab's real {@link Nginx} as a TLS-terminating WebSocket reverse proxy in front of the gateway, the way an
 * environment would publish its gateway: {@code wss://127.0.0.1:PORT/tunnel} → {@code ws://127.0.0.1:GW}. Its
 * prefix is a temporary directory, deleted on close.
 */
public final class NginxRelay implements AutoCloseable {
    private static final int ATTEMPTS = 3;

    private final Nginx nginx;
    private final Path dir;
    private final int port;
    private final SelfSignedCertificate certificate;

    private NginxRelay(Nginx nginx, Path dir, int port, SelfSignedCertificate certificate) {
        this.nginx = nginx;
        this.dir = dir;
        this.port = port;
        this.certificate = certificate;
    }

    public static NginxRelay start(int gatewayPort) {
        Nginx.require();
        Path dir;
        try {
            dir = Files.createTempDirectory("ptun-nginx");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try {
            SelfSignedCertificate cert = SelfSignedCertificate.create(dir);
            // A few attempts: the port is picked before nginx binds it.
            for (int attempt = 1; ; attempt++) {
                int port = Processes.freePort();
                try {
                    Nginx nginx = Nginx.start("nginx", dir, config(dir, port, gatewayPort, cert), List.of(port));
                    return new NginxRelay(nginx, dir, port, cert);
                } catch (AssertionError e) {
                    if (attempt == ATTEMPTS) {
                        throw e;
                    }
                }
            }
        } catch (RuntimeException | Error e) {
            Processes.deleteTree(dir);
            throw e;
        }
    }

    static String config(Path dir, int port, int gatewayPort, SelfSignedCertificate cert) {
        return Nginx.config(dir, "", 256, """
                  access_log %1$s/access.log;
                  server {
                    listen 127.0.0.1:%2$d ssl;
                    server_name localhost;
                    ssl_certificate %3$s;
                    ssl_certificate_key %4$s;
                    ssl_protocols TLSv1.2 TLSv1.3;
                    location / {
                      proxy_pass http://127.0.0.1:%5$d;
                      proxy_http_version 1.1;
                      proxy_set_header Upgrade $http_upgrade;
                      proxy_set_header Connection "upgrade";
                      proxy_set_header Host $host;
                      proxy_read_timeout 3600s;
                      proxy_send_timeout 3600s;
                      proxy_buffering off;
                    }
                  }
                """.formatted(dir, port, cert.certPem(), cert.keyPem(), gatewayPort));
    }

    /** The gateway URL the ingress dials through this relay. */
    public URI gatewayUrl() {
        return URI.create("wss://127.0.0.1:" + port + "/tunnel");
    }

    /**
     * How many tunnel upgrades nginx has logged: access-log lines {@code "GET /tunnel HTTP/1.1" 101}. nginx writes
     * a request's line when it ends, so an upgraded connection appears once it has closed.
     */
    public long tunnelUpgradesLogged() {
        Path log = dir.resolve("access.log");
        try {
            if (!Files.exists(log)) {
                return 0;
            }
            try (var lines = Files.lines(log)) {
                return lines.filter(l -> l.contains("\"GET /tunnel HTTP/1.1\" 101 ")).count();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The ends of nginx's access and error logs, for a failure message (they hold no credentials). */
    public String logs() {
        return "access.log: " + Processes.tail(dir.resolve("access.log"), 1500) + "; error.log: "
                + Processes.tail(dir.resolve("error.log"), 1500);
    }

    public SelfSignedCertificate certificate() {
        return certificate;
    }

    public String version() {
        return Nginx.version();
    }

    @Override
    public void close() {
        nginx.close();
        Processes.deleteTree(dir);
    }
}
