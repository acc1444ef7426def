package dev.previewtunnel.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.previewtunnel.spikes.lab.LabProcess;
import dev.previewtunnel.spikes.lab.Nginx;
import dev.previewtunnel.spikes.lab.Processes;

import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

/**
 * What a stream open (figure 3) costs on this machine through relays that do nothing else: the benchmark's target
 * reached directly, through one nginx {@code stream} proxy (a plain TCP relay in C: accept, connect, copy), and
 * through two chained, the shape of the tunnel's path (ingress, then gateway) without its protocol, authentication
 * or grant check. Same client and measurement as figure 3: connect to first target byte, one open at a time, 2 ms
 * apart; the three kinds alternate so a noisy machine affects them alike. Run with {@code bench/open-floor.sh}
 * ({@code bench/run.sh --open-floor}).
 */
public final class OpenFloor {
    static final String STREAM_MODULE = "/usr/lib/nginx/modules/ngx_stream_module.so";

    private OpenFloor() {
    }

    public static void main(String[] args) throws Exception {
        int warm = 1_000;
        int count = 3_000;
        Path json = Path.of("benchmarks/target/open-floor.json");
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--warm" -> warm = Integer.parseInt(args[++i]);
                case "--opens" -> count = Integer.parseInt(args[++i]);
                case "--json" -> json = Path.of(args[++i]);
                case "--help", "-h" -> {
                    System.out.println("""
                            usage: bench/open-floor.sh [--warm N] [--opens N] [--json FILE]
                              Stream-open latency (connect -> first target byte) straight to the benchmark's
                              target, through one nginx stream relay and through two chained (the tunnel's
                              shape without its protocol). Needs nginx and its stream module
                              (Debian: apt-get install nginx libnginx-mod-stream).
                              --warm N    unmeasured rounds first (default 1000; a round opens each kind once)
                              --opens N   measured rounds (default 3000)
                              --json F    results (default benchmarks/target/open-floor.json)""");
                    return;
                }
                default -> {
                    System.err.println("unknown option " + args[i] + " (--help)");
                    System.exit(2);
                }
            }
        }
        Path nginx = Processes.find("nginx");
        if (nginx == null || !Files.isRegularFile(Path.of(STREAM_MODULE))) {
            System.err.println("open-floor needs nginx and its stream module (" + STREAM_MODULE + "); on Debian: "
                    + "apt-get install nginx libnginx-mod-stream");
            System.exit(2);
        }
        Path dir = Files.createTempDirectory("ptun-open-floor");
        try {
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            LabProcess target = Lab.startTarget(java, Path.of(OpenFloor.class.getProtectionDomain().getCodeSource()
                    .getLocation().toURI()).toString(), 1, dir);
            int targetPort = Lab.targetPorts(target).get(0);
            int relay1 = Processes.freePort();
            int relay2 = Processes.freePort();
            // Two listeners: relay1 -> target, relay2 -> relay1 -> target. One worker, as one tunnel process.
            Nginx.start("nginx", dir.resolve("nginx"), """
                    load_module %s;
                    worker_processes 1;
                    pid %s;
                    error_log %s;
                    events { worker_connections 1024; }
                    stream {
                      server { listen 127.0.0.1:%d; proxy_pass 127.0.0.1:%d; tcp_nodelay on; }
                      server { listen 127.0.0.1:%d; proxy_pass 127.0.0.1:%d; tcp_nodelay on; }
                    }
                    """.formatted(STREAM_MODULE, dir.resolve("nginx.pid"), dir.resolve("nginx-error.log"),
                    relay1, targetPort, relay2, relay1), List.of(relay1, relay2));

            List<String> names = List.of("direct", "one relay", "two relays");
            List<Route> routes = List.of(Route.plain("direct", "direct", List.of(targetPort)),
                    Route.plain("relay1", "one relay", List.of(relay1)),
                    Route.plain("relay2", "two relays", List.of(relay2)));
            for (int i = 0; i < warm; i++) {
                for (Route r : routes) {
                    openOnce(r);
                }
            }
            long[][] t = new long[routes.size()][count];
            for (int i = 0; i < count; i++) {
                for (int k = 0; k < routes.size(); k++) {
                    t[k][i] = openOnce(routes.get(k));
                }
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("startedAt", Instant.now().toString());
            out.put("loadAverage", Files.readString(Path.of("/proc/loadavg")).strip());
            out.put("warmRounds", warm);
            out.put("rounds", count);
            List<Map<String, Object>> rows = new ArrayList<>();
            System.out.printf(Locale.ROOT, "%-12s %9s %9s %9s   (stream open: connect -> first target byte, ms)%n",
                    "path", "p50", "p90", "p99");
            for (int k = 0; k < routes.size(); k++) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("path", names.get(k));
                row.put("p50ms", Stats.round(Stats.percentile(t[k], 50) / 1e6, 3));
                row.put("p90ms", Stats.round(Stats.percentile(t[k], 90) / 1e6, 3));
                row.put("p99ms", Stats.round(Stats.percentile(t[k], 99) / 1e6, 3));
                rows.add(row);
                System.out.printf(Locale.ROOT, "%-12s %9.3f %9.3f %9.3f%n", names.get(k), row.get("p50ms"),
                        row.get("p90ms"), row.get("p99ms"));
            }
            out.put("paths", rows);
            Files.createDirectories(json.toAbsolutePath().getParent());
            new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(json.toFile(), out);
            System.out.println("JSON: " + json.toAbsolutePath());
        } finally {
            LabProcess.destroyAll();
            Processes.deleteTree(dir);
        }
    }

    /** One open as figure 3 times it, closed right after the target's first byte, then the same 2 ms pause. */
    private static long openOnce(Route route) throws Exception {
        long t0 = System.nanoTime();
        SocketChannel ch = route.open(0);
        long t1 = System.nanoTime();
        ch.close();
        LockSupport.parkNanos(2_000_000L);
        return t1 - t0;
    }
}
