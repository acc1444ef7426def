package dev.previewtunnel.bench;

import dev.previewtunnel.spikes.lab.LabProcess;
import dev.previewtunnel.spikes.lab.Nginx;
import dev.previewtunnel.spikes.lab.Processes;

import java.net.InetSocketAddress;
import java.nio.file.Path;
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

    final LabProcess first;
    final LabProcess second;
    final InetSocketAddress oneHop;
    final InetSocketAddress twoHops;

    private PageRelays(LabProcess first, LabProcess second, InetSocketAddress oneHop, InetSocketAddress twoHops) {
        this.first = first;
        this.second = second;
        this.oneHop = oneHop;
        this.twoHops = twoHops;
    }

    /** Null when nginx is not installed (then the reason is in {@code why[0]}). */
    static PageRelays start(Path dir, int vitePort, String[] why) {
        if (Processes.find("nginx") == null) {
            why[0] = "nginx is not installed (Debian: apt-get install nginx-light or nginx)";
            return null;
        }
        int relay1 = Processes.freePort();
        int relay2 = Processes.freePort();
        int relay3 = Processes.freePort();
        Nginx second = startNginx(dir, "page-relay-b", server(relay3, vitePort), List.of(relay3));
        try {
            Nginx first = startNginx(dir, "page-relay-a", server(relay1, vitePort) + server(relay2, relay3),
                    List.of(relay1, relay2));
            return new PageRelays(first.process(), second.process(), new InetSocketAddress("127.0.0.1", relay1),
                    new InetSocketAddress("127.0.0.1", relay2));
        } catch (RuntimeException | Error e) {
            second.close();
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

    /** A single nginx process (no master: its pid is the one that does the work) serving {@code servers}. */
    private static Nginx startNginx(Path dir, String name, String servers, List<Integer> ports) {
        return Nginx.start(name, dir.resolve(name), Nginx.config(dir.resolve(name), "master_process off;\n", 1024,
                """
                  access_log off;
                  tcp_nodelay on;
                %s""".formatted(servers)), ports);
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
