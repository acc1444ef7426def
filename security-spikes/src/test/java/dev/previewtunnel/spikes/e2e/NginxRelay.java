package dev.previewtunnel.spikes.e2e;

import dev.previewtunnel.spikes.browser.Processes;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * A real nginx (Debian's package) as a TLS-terminating WebSocket reverse proxy in front of the gateway, the way
 * an environment would publish its gateway: {@code wss://127.0.0.1:PORT/tunnel} → {@code ws://127.0.0.1:GW}.
 * Own prefix, config, pid and logs in a temporary directory; {@code daemon off}; the process tree is destroyed
 * on close.
 */
public final class NginxRelay implements AutoCloseable {
    private final Process process;
    private final Path dir;
    private final int port;
    private final TestCertificate certificate;

    private NginxRelay(Process process, Path dir, int port, TestCertificate certificate) {
        this.process = process;
        this.dir = dir;
        this.port = port;
        this.certificate = certificate;
    }

    public static NginxRelay start(int gatewayPort) {
        Path nginx = Processes.require("nginx", "apt-get install nginx-light");
        Path dir;
        try {
            dir = Files.createTempDirectory("ptun-nginx");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try {
            TestCertificate cert = TestCertificate.create(dir);
            AssertionError last = null;
            for (int attempt = 0; attempt < 3; attempt++) {
                int port = Processes.freePort();
                Path conf = dir.resolve("nginx.conf");
                Files.writeString(conf, config(dir, port, gatewayPort, cert));
                Path log = dir.resolve("nginx.out");
                Process p = Processes.start(Processes.builder(List.of(nginx.toString(), "-p", dir + "/", "-c",
                        conf.toString(), "-e", dir.resolve("error.log").toString(), "-g", "daemon off;"), log));
                try {
                    Processes.awaitPort("127.0.0.1", port, Duration.ofSeconds(20), p, log);
                    return new NginxRelay(p, dir, port, cert);
                } catch (AssertionError e) {
                    Processes.destroyTree(p);
                    last = new AssertionError(e.getMessage() + "; error.log: "
                            + Processes.tail(dir.resolve("error.log"), 2000), e);
                }
            }
            throw last;
        } catch (IOException e) {
            Processes.deleteTree(dir);
            throw new UncheckedIOException(e);
        } catch (RuntimeException | Error e) {
            Processes.deleteTree(dir);
            throw e;
        }
    }

    static String config(Path dir, int port, int gatewayPort, TestCertificate cert) {
        boolean root = "root".equals(System.getProperty("user.name"));
        return (root ? "user root;\n" : "") + """
                worker_processes 1;
                pid %1$s/nginx.pid;
                error_log %1$s/error.log warn;
                events { worker_connections 256; }
                http {
                  access_log %1$s/access.log;
                  client_body_temp_path %1$s/client_body;
                  proxy_temp_path %1$s/proxy;
                  fastcgi_temp_path %1$s/fastcgi;
                  uwsgi_temp_path %1$s/uwsgi;
                  scgi_temp_path %1$s/scgi;
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
                }
                """.formatted(dir, port, cert.certPem(), cert.keyPem(), gatewayPort);
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

    public TestCertificate certificate() {
        return certificate;
    }

    public String version() {
        Path nginx = Processes.find("nginx");
        return Processes.run(List.of(nginx.toString(), "-v"), null, Duration.ofSeconds(10)).output().trim();
    }

    @Override
    public void close() {
        Processes.destroyTree(process);
        Processes.deleteTree(dir);
    }
}
