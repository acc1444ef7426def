package dev.previewtunnel.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.previewtunnel.mux.local.JvmDefaults;
import dev.previewtunnel.mux.local.NettyDefaults;
import dev.previewtunnel.spikes.lab.LabProcess;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.socket.SocketChannel;

import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The floor under the idle RSS of figure 6 (issue 21): what an idle process of each runtime holds before it does
 * anything of ours, beside an idle gateway and ingress and an idle Dev Tunnels peer, each read 3 s and again,
 * settled, 15 s after it is ready (a floor process: its ready line; a tunnel or peer pair: once it carried one
 * stream per target port, as figure 6's idle rows, {@link MemWatch#IDLE_SETTLED}); three rounds, interleaved,
 * medians. A JVM with the tunnel's JVM options (the ones users run,
 * {@link JvmDefaults#MEMORY_OPTIONS}, unless --server-jvm says otherwise; tiered compilation, as the gateway runs;
 * the Netty properties the programs' mains set, {@link NettyDefaults#PROPERTIES}) doing nothing, the same with a
 * Netty epoll server bound, {@code mux-protocol} alone forwarding ports ({@link MuxFloor}: the design's own floor),
 * Node doing nothing, and Node with a {@code ws} server listening. Run with
 * {@code bench/memory-floor.sh} ({@code bench/run.sh --memory-floor}).
 */
public final class MemoryFloor {

    private MemoryFloor() {
    }

    /**
     * One kind of idle process: how to start it, and a key and a label for each process it starts (a tunnel and
     * the peer start two, in the order of {@code keys}).
     */
    private record Kind(List<String> keys, List<String> labels, Supplier<List<LabProcess>> start) {
        static Kind one(String key, String label, Supplier<LabProcess> start) {
            return new Kind(List.of(key), List.of(label), () -> List.of(start.get()));
        }
    }

    public static void main(String[] args) throws Exception {
        int rounds = 3;
        List<String> rest = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rounds" -> {
                    if (i + 1 >= args.length) {
                        System.err.println("--rounds needs a number (--help)");
                        System.exit(2);
                    }
                    rounds = Integer.parseInt(args[++i]);
                }
                case "--help", "-h" -> {
                    System.out.println("""
                            usage: bench/memory-floor.sh [--rounds N] [--json FILE]
                              Idle RSS 3 s after ready and again, settled, at 15 s: a JVM with the options users
                              run doing nothing, the same with a Netty epoll server bound, mux-protocol alone
                              forwarding ports (both sides, one stream per target port carried), Node doing
                              nothing, Node with a ws server, the tunnel's gateway and ingress (ws://) and the Dev
                              Tunnels peer's two sides.
                              --rounds N  rounds, each kind started once per round (default 3)
                              --json F    results (default benchmarks/target/memory-floor.json)""");
                    return;
                }
                default -> rest.add(args[i]);
            }
        }
        List<String> labArgs = new ArrayList<>(List.of("--paths", "ws,dt", "--figures", "bulk"));
        labArgs.addAll(rest);
        Config c = Config.parse(labArgs.toArray(String[]::new));
        if (c.nmt || !c.gatewayJvmExtra.isEmpty() || !c.ingressJvmExtra.equals(Config.INGRESS_JVM_DEFAULT)) {
            System.err.println("--nmt, --gateway-jvm and --ingress-jvm would make the tunnel's processes differ from "
                    + "the floor's; --server-jvm changes the options of every JVM here alike (the ingress still "
                    + "adds its C1-only default after them)");
            System.exit(2);
        }
        if (c.jsonOut.endsWith("bench-results.json")) {
            c.jsonOut = c.jsonOut.resolveSibling("memory-floor.json");
        }
        System.exit(run(c, rounds, System.out));
    }

    static int run(Config c, int rounds, PrintStream out) throws Exception {
        Map<String, List<Long>> kib = new LinkedHashMap<>();
        Map<String, List<Long>> settledKib = new LinkedHashMap<>();
        Map<String, String> what = new LinkedHashMap<>();
        try (Lab lab = new Lab(c)) {
            lab.start();
            Path devtunnels = DevTunnelsPeer.install(c.root);
            // The gateway's options and the Netty properties the programs' mains set, the runner's class path, and
            // no logging backend: Netty's logger finds SLF4J on that path, which loaded logback into the "Netty
            // server bound" JVM until 2026-12-05 (70 of its classes then, 220 in finding 40; finding 58).
            List<String> jvm = lab.floorJvmWithoutLogging();
            String ws = new ObjectMapper().writeValueAsString(devtunnels.resolve("node_modules/ws").toString());
            List<Kind> kinds = List.of(
                    Kind.one("jvm", "JVM, options users run, doing nothing", () -> started(LabProcess.start(
                            "floor-jvm", concat(jvm, Idle.class.getName()), lab.dir, Lab.READY))),
                    Kind.one("jvmNetty", "the same + Netty epoll server bound", () -> started(LabProcess.start(
                            "floor-netty", concat(jvm, NettyIdle.class.getName()), lab.dir, Lab.READY))),
                    new Kind(List.of("muxEnv", "muxDesk"), List.of(
                            "mux-protocol alone, env side, one stream per target port carried",
                            "mux-protocol alone, desktop side (C1 only, as the ingress)"),
                            () -> {
                                Lab.MuxPair m = lab.startMuxFloor("mux", "-floor");
                                return List.of(m.env(), m.desk());
                            }),
                    new Kind(List.of("gateway", "ingress"), List.of(
                            "env-gateway serve (ws://), one stream per target port carried",
                            "desktop-ingress run, idle"), () -> {
                        Lab.Tunnel t = lab.startTunnel(false);
                        return List.of(t.gateway(), t.ingress());
                    }),
                    Kind.one("node", "Node doing nothing", () -> started(LabProcess.start("floor-node",
                            List.of("node", "-e", "console.log(JSON.stringify({event: 'ready'}));"
                                    + "setInterval(() => {}, 1 << 30);"), lab.dir, Lab.READY))),
                    Kind.one("nodeWs", "Node + ws server listening", () -> started(LabProcess.start(
                            "floor-node-ws", List.of("node", "-e", "const { WebSocketServer } = require("
                                    + ws + ");"
                                    + "const s = new WebSocketServer({ host: '127.0.0.1', port: 0 });"
                                    + "s.on('listening', () => console.log(JSON.stringify({event: 'ready'})));"),
                            lab.dir, Lab.READY))),
                    new Kind(List.of("peerEnv", "peerDesk"), List.of(
                            "Dev Tunnels peer env side (no cipher), one stream per target port carried",
                            "Dev Tunnels peer desktop side"), () -> {
                        DevTunnelsPeer p = DevTunnelsPeer.start(lab, false, "-floor");
                        return List.of(p.env(), p.desk());
                    }));
            for (int round = 0; round < rounds; round++) {
                for (int k = 0; k < kinds.size(); k++) {
                    Kind kind = kinds.get((k + round) % kinds.size()); // the first kind rotates
                    RunLog.log(out, "round " + (round + 1) + ": " + kind.labels().get(0));
                    List<LabProcess> procs = kind.start().get();
                    try {
                        // as figure 6's idle rows: after start, settled
                        long[][] read = MemWatch.idleKib(procs, MemWatch.IDLE_SETTLE, MemWatch.IDLE_SETTLED);
                        for (int i = 0; i < procs.size(); i++) {
                            String key = kind.keys().get(i);
                            what.putIfAbsent(key, kind.labels().get(i));
                            kib.computeIfAbsent(key, x -> new ArrayList<>()).add(read[0][i]);
                            settledKib.computeIfAbsent(key, x -> new ArrayList<>()).add(read[1][i]);
                        }
                    } finally {
                        for (int i = procs.size() - 1; i >= 0; i--) {
                            procs.get(i).close();
                        }
                    }
                }
            }
        } finally {
            LabProcess.destroyAll();
        }
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("at", Instant.now().toString());
        doc.put("machine", MachineInfo.machine());
        doc.put("jvmOptions", String.join(" ", c.serverJvmOptions));
        doc.put("settleSeconds", MemWatch.IDLE_SETTLE.toSeconds());
        doc.put("settledSeconds", MemWatch.IDLE_SETTLED.toSeconds());
        Map<String, Object> results = new LinkedHashMap<>();
        out.println();
        out.printf(Locale.ROOT, "%-72s %10s %10s  %s%n", "idle process (RSS after start, median MiB)",
                "at " + MemWatch.IDLE_SETTLE.toSeconds() + " s", "at " + MemWatch.IDLE_SETTLED.toSeconds() + " s",
                "rounds at each");
        for (var e : kib.entrySet()) {
            double[] mib = sortedMiB(e.getValue());
            double[] settled = sortedMiB(settledKib.get(e.getKey()));
            double median = Stats.median(mib);
            double settledMedian = Stats.median(settled);
            out.printf(Locale.ROOT, "%-72s %10.1f %10.1f  %s %s%n", what.get(e.getKey()), median, settledMedian,
                    Stats.rounded(mib, 1), Stats.rounded(settled, 1));
            results.put(e.getKey(), Map.of("what", what.get(e.getKey()), "medianMiB", Stats.round(median, 1),
                    "roundsMiB", Stats.rounded(mib, 1), "settledMedianMiB", Stats.round(settledMedian, 1),
                    "settledRoundsMiB", Stats.rounded(settled, 1)));
        }
        doc.put("results", results);
        Files.createDirectories(c.jsonOut.toAbsolutePath().getParent());
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(c.jsonOut.toFile(), doc);
        out.println("JSON: " + c.jsonOut.toAbsolutePath());
        return 0;
    }

    private static double[] sortedMiB(List<Long> kib) {
        return kib.stream().mapToDouble(v -> v / 1024.0).sorted().toArray();
    }

    /**
     * A single floor process, once its ready line came (the pairs wait for their streams themselves). SLF4J says
     * which provider it loads with SLF4J(I), and that it could not load the no-op provider it was given (and fell
     * back to logback, finding 40) with SLF4J(W) or (E): the Netty JVM's logger looked SLF4J up before its ready
     * line, so such a line fails the reading here.
     */
    private static LabProcess started(LabProcess p) {
        p.awaitReady(Duration.ofSeconds(30));
        String output = p.tail(8000);
        if (output.contains("SLF4J(W)") || output.contains("SLF4J(E)")) {
            p.close();
            throw new IllegalStateException(p.name() + " did not run without a logging backend: " + output);
        }
        return p;
    }

    private static List<String> concat(List<String> a, String b) {
        List<String> l = new ArrayList<>(a);
        l.add(b);
        return l;
    }

    /** A JVM that prints its ready line and waits to be killed. */
    public static final class Idle {
        private Idle() {
        }

        public static void main(String[] args) throws InterruptedException {
            System.out.println("{\"event\":\"ready\"}");
            Thread.sleep(Long.MAX_VALUE);
        }
    }

    /**
     * The same with a Netty epoll server bound on loopback (two event loops, as the gateway's). Netty's
     * epoll handler as it comes, not the programs' wrapper (finding 56): this server never writes, and the floor is
     * Netty's own.
     */
    public static final class NettyIdle {
        private NettyIdle() {
        }

        public static void main(String[] args) throws InterruptedException {
            EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, EpollIoHandler.newFactory());
            new ServerBootstrap().group(group).channel(EpollServerSocketChannel.class)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.close();
                        }
                    }).bind(new InetSocketAddress("127.0.0.1", 0)).sync();
            System.out.println("{\"event\":\"ready\"}");
            Thread.sleep(Long.MAX_VALUE);
        }
    }
}
