package dev.previewtunnel.spikes.lab;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * A real nginx (Debian's package) in the foreground ({@code daemon off}) with everything under a prefix directory of
 * its own: config, pid, logs and temp paths (Debian's compiled-in ones are under /var/lib/nginx). The caller owns
 * the prefix; {@link #close()} stops the process tree.
 */
public final class Nginx implements AutoCloseable {
    private final LabProcess process;
    private final Path prefix;

    private Nginx(LabProcess process, Path prefix) {
        this.process = process;
        this.prefix = prefix;
    }

    /** nginx's path; a missing nginx fails the run with the install hint (see {@link Processes#require}). */
    public static Path require() {
        return Processes.require("nginx", "apt-get install nginx-light");
    }

    /**
     * A whole config from the template: {@code main} directives (e.g. {@code master_process off;}), the prefix's pid,
     * error log and temp paths, {@code workerConnections}, and {@code http} inside the {@code http} block.
     */
    public static String config(Path prefix, String main, int workerConnections, String http) {
        boolean root = "root".equals(System.getProperty("user.name"));
        // As root a worker would run as nobody, which cannot read the prefix: it runs as root too.
        return (root ? "user root;\n" : "") + main + """
                worker_processes 1;
                pid %1$s/nginx.pid;
                error_log %1$s/error.log warn;
                events { worker_connections %2$d; }
                http {
                  client_body_temp_path %1$s/client_body;
                  proxy_temp_path %1$s/proxy;
                  fastcgi_temp_path %1$s/fastcgi;
                  uwsgi_temp_path %1$s/uwsgi;
                  scgi_temp_path %1$s/scgi;
                %3$s}
                """.formatted(prefix, workerConnections, http);
    }

    /**
     * Writes {@code config} to {@code prefix}/nginx.conf, starts nginx on it (its output in {@code prefix}/{@code
     * name}.log) and waits until every one of {@code ports} accepts connections; fails with the error log's tail.
     */
    public static Nginx start(String name, Path prefix, String config, List<Integer> ports) {
        Path nginx = require();
        try {
            Files.createDirectories(prefix);
            Path conf = prefix.resolve("nginx.conf");
            Files.writeString(conf, config);
            LabProcess p = LabProcess.start(name, List.of(nginx.toString(), "-p", prefix + "/", "-c",
                    conf.toString(), "-e", prefix.resolve("error.log").toString(), "-g", "daemon off;"), prefix, null);
            try {
                for (int port : ports) {
                    p.awaitPort(port, Duration.ofSeconds(20));
                }
            } catch (AssertionError | RuntimeException e) {
                p.close();
                throw new AssertionError(e.getMessage() + "; error.log: " + Processes.tail(
                        prefix.resolve("error.log"), 2000), e);
            }
            return new Nginx(p, prefix);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public LabProcess process() {
        return process;
    }

    public Path prefix() {
        return prefix;
    }

    /** nginx's version line ({@code nginx -v}). */
    public static String version() {
        return Processes.run(List.of(require().toString(), "-v"), null, Duration.ofSeconds(10)).output().trim();
    }

    @Override
    public void close() {
        process.close();
    }
}
