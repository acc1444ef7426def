package dev.previewtunnel.bench;

import dev.previewtunnel.spikes.lab.LabProcess;

import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Every figure but the page load, for one path (direct, ssh, dt, dt-aes, ws, wss, mux, mux-tls, mux-proxy or
 * ws-floor) at a time. A figure that fails is recorded in its place and in {@code failures}, and the run goes on.
 * One per run.
 */
final class PathMeasurement {
    interface Figure {
        Map<String, Object> run() throws Exception;
    }

    private final Lab lab;
    private final Config c;
    private final Map<String, Object> notes;
    private final List<String> failures;
    private final PrintStream out;

    PathMeasurement(Lab lab, Map<String, Object> notes, List<String> failures, PrintStream out) {
        this.lab = lab;
        this.c = lab.config;
        this.notes = notes;
        this.failures = failures;
        this.out = out;
    }

    /**
     * A tunnel that figure 7 will load pages through is left running in {@code keptForPage} (warm, as a
     * long-running ingress is) for {@link PagePhase}; a Dev Tunnels peer is closed, and its path added to
     * {@code freshForPage} for a peer of its own there.
     */
    Map<String, Object> measurePath(String path, List<Lab.PagePath> keptForPage, List<String> freshForPage)
            throws Exception {
        switch (path) {
            case "direct" -> {
                return measure(lab.directRoute(), null, false);
            }
            case "ssh" -> {
                try (Lab.Ssh ssh = lab.startSsh("")) {
                    notes.put("ssh", ssh.version() + ", cipher " + ssh.cipher() + " (OpenSSH defaults)");
                    Map<String, Object> r = measure(ssh.route(), ssh.memWatch(), false);
                    abort(r, ssh.route(), () -> ssh.ssh().process().isAlive() ? 0 : 1);
                    return r;
                }
            }
            case "dt", "dt-aes" -> {
                // Closed after its figures, and started afresh for figure 7 (BenchRunner), a precaution: in the
                // full runs that kept it, its environment side held 1.4-1.9 GiB queued after figure 4 and the
                // tunnel's figures after it were far below the same code alone (docs/performance.md, "A full run
                // with the Dev Tunnels peer"); cpuAfterFigures records whether it is still busy then.
                Map<String, Object> r = new LinkedHashMap<>();
                try (DevTunnelsPeer peer = DevTunnelsPeer.start(lab, path.equals("dt-aes"), "")) {
                    notes.put(path, peer.describe());
                    r.put("idleRss", MemWatch.idleRss(peer.env(), peer.desk(), c));
                    MemWatch mem = peer.memWatch();
                    r.putAll(measure(peer.route(), mem, false));
                    // One WebSocket carries the session: "connections lost" = a side that died.
                    abort(r, peer.route(), () -> (peer.env().isAlive() ? 0 : 1) + (peer.desk().isAlive() ? 0 : 1));
                    r.put("cpuAfterFigures", busyAfterFigures(mem));
                    peer.putLogErrors(r);
                }
                if (lab.browser != null && c.figures.contains("page")) {
                    freshForPage.add(path);
                }
                return r;
            }
            case "ws-floor" -> {
                // The ingress in front of the floor's environment side (finding 53): figures 1-3, as mux-proxy,
                // whose desktop side it replaces; the environment side has no limits for figures 4-6 to meet.
                // Kept for figure 7 as the tunnel is: beside ws and mux it splits the page load's cost between
                // the ingress's HTTP proxy and the gateway (finding 63).
                Lab.Tunnel t = lab.startIngressOnFloor("");
                boolean keep = false;
                try {
                    Map<String, Object> r = new LinkedHashMap<>();
                    r.put("idleRss", MemWatch.idleRss(t.gateway(), t.ingress(), c));
                    r.putAll(measure(t.route(), t.memWatch(c.nmt), true));
                    if (lab.browser != null && c.figures.contains("page")) {
                        keptForPage.add(new IngressOnFloor(t)); // its logs are checked after the page loads
                        keep = true;
                    } else {
                        putIngressOnFloorLogErrors(r, t);
                    }
                    return r;
                } finally {
                    if (!keep) {
                        t.close();
                    }
                }
            }
            case "ws", "wss" -> {
                Lab.Tunnel t = lab.startTunnel(path.equals("wss"), "");
                boolean keep = false;
                try {
                    notes.put("transport", t.gatewayTransport());
                    Map<String, Object> r = new LinkedHashMap<>();
                    r.put("idleRss", MemWatch.idleRss(t.gateway(), t.ingress(), c));
                    r.putAll(measure(t.route(), t.memWatch(c.nmt), false));
                    abort(r, t.route(), () -> TunnelLogs.countLines(t.ingress(), "tunnel connection", " lost"));
                    if (lab.browser != null && c.figures.contains("page")) {
                        keptForPage.add(t); // its log is checked after the page loads
                        keep = true;
                    } else {
                        TunnelLogs.putLogErrors(r, t);
                    }
                    return r;
                } finally {
                    if (!keep) {
                        t.close();
                    }
                }
            }
            case "mux", "mux-tls", "mux-proxy" -> {
                // The design's floor beside the tunnel and the peer (finding 40), and with a CONNECT in front of
                // each stream (mux-proxy, finding 52): figures 1-3 and the idle row only. It has none of the
                // gateway's limits (streams per session, queued bytes), so figures 4-6 would measure a program
                // nobody runs. mux-proxy's figures 1-2 are mux's relay after the CONNECT, run all the same so that
                // its open finds the processes as warm as every path's (run 24 measured its open alone, colder).
                // mux is kept for figure 7 as the tunnel is: the page load's floor without the HTTP proxy (finding
                // 61).
                Lab.MuxPair m = lab.startMuxFloor(path, "");
                boolean keep = false;
                try {
                    Map<String, Object> r = new LinkedHashMap<>();
                    r.put("idleRss", MemWatch.idleRss(m.env(), m.desk(), c));
                    r.putAll(measure(m.route(), m.memWatch(c.nmt), true));
                    if (m.pageUrl() != null) { // Vite's port is forwarded only when figure 7 runs
                        keptForPage.add(m); // its log is checked after the page loads
                        keep = true;
                    } else {
                        TunnelLogs.putFloorLogErrors(r, List.of(m.env(), m.desk()));
                    }
                    return r;
                } finally {
                    if (!keep) {
                        m.close();
                    }
                }
            }
            default -> throw new IllegalArgumentException("unknown path " + path);
        }
    }

    /** ws-floor kept for figure 7: loaded through its ingress as a tunnel is, its logs read as ws-floor's. */
    private record IngressOnFloor(Lab.Tunnel tunnel) implements Lab.PagePath {
        @Override
        public String key() {
            return tunnel.key();
        }

        @Override
        public PageLoad.Via pageVia() {
            return tunnel.pageVia();
        }

        @Override
        public void putLogErrors(Map<String, Object> r) {
            putIngressOnFloorLogErrors(r, tunnel);
        }

        @Override
        public void close() {
            tunnel.close();
        }
    }

    /**
     * ws-floor: the ingress's log as a tunnel's (its WARN and ERROR lines), the floor's environment side's as the
     * floor's (refused opens, SLF4J warnings; a WARN/ERROR scan finds nothing in a log without a backend).
     */
    private static void putIngressOnFloorLogErrors(Map<String, Object> r, Lab.Tunnel t) {
        TunnelLogs.putLogErrors(r, t);
        TunnelLogs.putFloorLogErrors(r, List.of(t.gateway()));
    }

    /**
     * One of the earlier rounds of figures 1-3 ({@link Rounds}): the path's processes started afresh, as for its
     * full round, measured, checked for log errors and closed. {@code suffix} keeps their logs apart.
     */
    Map<String, Object> measureRound(String path, String suffix) throws Exception {
        switch (path) {
            case "direct" -> {
                return measure(lab.directRoute(), null, true);
            }
            case "ssh" -> {
                try (Lab.Ssh ssh = lab.startSsh(suffix)) {
                    return measure(ssh.route(), ssh.memWatch(), true);
                }
            }
            case "dt", "dt-aes" -> {
                try (DevTunnelsPeer peer = DevTunnelsPeer.start(lab, path.equals("dt-aes"), suffix)) {
                    Map<String, Object> r = measure(peer.route(), peer.memWatch(), true);
                    r.put("peer", peer.describe()); // says whether this round's peer needed a second start
                    peer.putLogErrors(r);
                    return r;
                }
            }
            case "ws-floor" -> {
                try (Lab.Tunnel t = lab.startIngressOnFloor(suffix)) {
                    Map<String, Object> r = measure(t.route(), t.memWatch(c.nmt), true);
                    putIngressOnFloorLogErrors(r, t);
                    return r;
                }
            }
            case "ws", "wss" -> {
                Lab.Tunnel t = lab.startTunnel(path.equals("wss"), suffix);
                try {
                    Map<String, Object> r = measure(t.route(), t.memWatch(c.nmt), true);
                    TunnelLogs.putLogErrors(r, t);
                    return r;
                } finally {
                    t.close();
                }
            }
            case "mux", "mux-tls", "mux-proxy" -> {
                try (Lab.MuxPair m = lab.startMuxFloor(path, suffix)) {
                    Map<String, Object> r = measure(m.route(), m.memWatch(c.nmt), true);
                    TunnelLogs.putFloorLogErrors(r, List.of(m.env(), m.desk()));
                    return r;
                }
            }
            default -> throw new IllegalArgumentException("unknown path " + path);
        }
    }

    /**
     * CPU both processes spend in the 2 s after the last figure, as a percentage of one CPU each: what a process
     * kept running would take from the next path's figures.
     */
    private static Map<String, Object> busyAfterFigures(MemWatch mem) throws InterruptedException {
        long[] before = mem.cpuMillis();
        long t0 = System.nanoTime();
        Thread.sleep(2_000); // a fixed sampling window, not a wait for a condition
        long[] after = mem.cpuMillis();
        double millis = (System.nanoTime() - t0) / 1e6;
        return Map.of("envPercent", Stats.round(100 * (after[0] - before[0]) / millis, 1),
                "deskPercent", Stats.round(100 * (after[1] - before[1]) / millis, 1));
    }

    /** The selected figures; {@code firstThree}: figures 1-3 only, as an earlier round measures them. */
    private Map<String, Object> measure(Route route, MemWatch mem, boolean firstThree) {
        Map<String, Object> r = new LinkedHashMap<>();
        // CPU the path's own processes spend per unit of work: robust to a busy machine, unlike times.
        figure(r, "bulk", route, "1 bulk", () -> BulkFigure.measure(route, c, mem));
        figure(r, "pingpong", route, "2 ping-pong", () -> PingPongFigure.measure(route, c, mem));
        figure(r, "open", route, "3 stream open", () -> StreamOpenFigure.measure(route, c, mem));
        if (firstThree) {
            return r;
        }
        // From here on in order of growing memory needs: RSS rarely shrinks once touched, so each phase's peak
        // (VmHWM is reset at its start) is its own only if no earlier phase needed more.
        if (mem != null) {
            figure(r, "slowReader", route, "6 slow reader", () -> SlowReaderFigure.measure(route, c, mem));
        }
        figure(r, "hol", route, "5 head-of-line", () -> HeadOfLineFigure.measure(route, c, mem));
        figure(r, "concurrent", route, "4 " + c.streams + " streams",
                () -> ConcurrentStreamsFigure.measure(route, c, mem));
        return r;
    }

    /**
     * The robustness probe (not an issue figure), as a figure: when it fails (in run 11 {@code ssh -L}, right after
     * figure 4's 1,000 channels, opened none of its 40 streams in 60 s) the path keeps its other figures.
     */
    private void abort(Map<String, Object> r, Route route, LongSupplier lost) {
        if (c.abortStreams > 0) {
            figure(r, "abort", route, "robustness: abort " + c.abortStreams + " busy streams",
                    () -> AbortProbe.run(route, c, lost));
        }
    }

    /** Runs one figure; a failure is recorded in its place (and in the failures list) and the run goes on. */
    private void figure(Map<String, Object> r, String key, Route route, String what, Figure f) {
        String name = key.equals("slowReader") ? "slow" : key;
        if (!c.figures.contains(name)) {
            return;
        }
        RunLog.step(out, route, what);
        try {
            r.put(key, f.run());
        } catch (Exception e) {
            RunLog.log(out, "  FAILED " + route.label + " " + what + ": " + e);
            Map<String, Object> err = new LinkedHashMap<>();
            err.put("error", String.valueOf(e));
            r.put(key, err);
            failures.add(route.key + " " + what + ": " + e);
        }
    }
}
