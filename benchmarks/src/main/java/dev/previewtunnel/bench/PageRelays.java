package dev.previewtunnel.bench;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The floor under figure 7 on this machine: the same page loads through nginx acting as a plain HTTP forward proxy,
 * one hop ({@code relay1 -> Vite}) and two chained ({@code relay2 -> relay3 -> Vite}), the tunnel's shape (ingress,
 * then gateway, each decoding HTTP and re-encoding it) without its protocol, authentication or grant check. Like
 * the tunnel, each proxy keeps its upstream connections alive. Two nginx processes, each a single process with no
 * master ({@code master_process off}: its pid is the one that does the work, so its CPU per load can be read as the
 * tunnel's is): the first serves relay1 and relay2, the second relay3. Docs: performance.md, finding 20.
 */
final class PageRelays implements AutoCloseable {
    /** Result keys of the two paths, in the order of {@link #vias()}. */
    static final List<String> KEYS = List.of("nginx1", "nginx2");

    final Proc first;
    final Proc second;
    final InetSocketAddress oneHop;
    final InetSocketAddress twoHops;

    private PageRelays(Proc first, Proc second, InetSocketAddress oneHop, InetSocketAddress twoHops) {
        this.first = first;
        this.second = second;
        this.oneHop = oneHop;
        this.twoHops = twoHops;
    }

    /** Null when nginx is not installed (then the reason is in {@code why[0]}). */
    static PageRelays start(Path dir, int vitePort, String[] why) throws IOException {
        Path nginx = PageLoad.which("nginx");
        if (nginx == null) {
            why[0] = "nginx is not installed (Debian: apt-get install nginx-light or nginx)";
            return null;
        }
        int relay1 = Lab.freePort();
        int relay2 = Lab.freePort();
        int relay3 = Lab.freePort();
        Proc second = startNginx(nginx, dir, "page-relay-b", server(relay3, vitePort));
        Proc first = null;
        try {
            first = startNginx(nginx, dir, "page-relay-a", server(relay1, vitePort) + server(relay2, relay3));
            Lab.awaitPort(relay3, Duration.ofSeconds(10), second);
            Lab.awaitPort(relay1, Duration.ofSeconds(10), first);
            Lab.awaitPort(relay2, Duration.ofSeconds(10), first);
            return new PageRelays(first, second, new InetSocketAddress("127.0.0.1", relay1),
                    new InetSocketAddress("127.0.0.1", relay2));
        } catch (RuntimeException e) {
            second.close();
            if (first != null) {
                first.close();
            }
            throw e;
        }
    }

    /**
     * One listener proxying every request, absolute-form (from Chromium) or origin-form (from the first relay), to
     * {@code upstreamPort} over kept-alive HTTP/1.1 connections, with the browser's Host header, as the tunnel does.
     */
    private static String server(int listen, int upstreamPort) {
        return """
                  upstream u%1$d { server 127.0.0.1:%2$d; keepalive 32; }
                  server {
                    listen 127.0.0.1:%1$d;
                    location / {
                      proxy_pass http://u%1$d;
                      proxy_http_version 1.1;
                      proxy_set_header Connection "";
                      proxy_set_header Host $http_host;
                    }
                  }
                """.formatted(listen, upstreamPort);
    }

    private static Proc startNginx(Path nginx, Path dir, String name, String servers) throws IOException {
        Path prefix = Files.createDirectories(dir.resolve(name));
        // Temp paths inside the prefix: Debian's compiled-in ones are under /var/lib/nginx. No worker ever
        // writes there for these small responses, but nginx checks them at start.
        return Nginx.start(nginx, prefix, name, dir, """
                master_process off;
                worker_processes 1;
                pid %1$s/nginx.pid;
                error_log %1$s/error.log warn;
                events { worker_connections 1024; }
                http {
                  access_log off;
                  tcp_nodelay on;
                  client_body_temp_path %1$s/body;
                  proxy_temp_path %1$s/proxy;
                  fastcgi_temp_path %1$s/fastcgi;
                  uwsgi_temp_path %1$s/uwsgi;
                  scgi_temp_path %1$s/scgi;
                %2$s}
                """.formatted(prefix, servers));
    }

    /** The two paths as figure 7 loads through them; their CPU per load is read from the nginx processes. */
    List<PageLoad.Via> vias() {
        return List.of(new PageLoad.Via(oneHop, null, null, null, first),
                new PageLoad.Via(twoHops, null, null, second, first));
    }

    @Override
    public void close() {
        first.close();
        second.close();
    }
}
