package dev.previewtunnel.bench;

import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.mux.local.JvmDefaults;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** Sizes and durations of one run. {@link #smoke()} is a few-seconds version that only proves the runner works. */
final class Config {
    Path root = findRoot();
    Path jsonOut;
    List<String> paths = new ArrayList<>(List.of("direct", "ssh", "dt", "dt-aes", "ws", "wss", "mux", "mux-tls",
            "mux-proxy"));
    List<String> figures = new ArrayList<>(List.of("bulk", "pingpong", "open", "slow", "hol", "concurrent", "page",
            "abort"));
    int pageWarm = 2;
    int pageLoads = 5;
    /** Unmeasured rounds between figure 7's two series (a JIT-warm tunnel); negative: no second series. */
    int pageSteadyWarm = 40;
    /** Figure 7's rounds also load through one and two nginx HTTP proxies (its floor, {@link PageRelays}). */
    boolean pageRelays = true;
    /** Rounds of figures 1-3, paths interleaved, medians reported ({@link Rounds}); the last round has them all. */
    int rounds = 3;
    int targetPorts = 4;
    /** The ingress's --pool: the product's default, what users run (issue 21, deliverable 3). */
    int pool = IngressConfig.DEFAULT_POOL;
    /** The ingress's --io-threads, and the floor's desktop-side loops with it; default the ingress's own. */
    int ingressIoThreads = IngressConfig.DEFAULT_IO_THREADS;

    long bulkBytes = 1L << 30;      // per direction, per repetition
    long bulkWarmBytes = 256L << 20; // one warm-up transfer each way; the first is also reported as "cold"
    long bulkWarmMillis = 10_000;    // ... repeated, alternating, until this much time has passed (JIT: see docs)
    int bulkReps = 3;               // median reported
    long bulkMaxMillis = 20_000;    // a repetition stops early (and is scaled) past this

    int pingWarm = 5_000;
    int pingCount = 20_000;

    int openWarm = 1_000;     // the open path is deep (HTTP/2 stream, pipelines, audit): C2 needs a while
    int openCount = 500;
    long openPauseMillis = 2;
    long openWarmMaxMillis = 8_000;
    long openMaxMillis = 15_000;

    int streams = 1_000;
    int streamsInFlight = 64;
    long streamsWarmMillis = 2_000;
    long streamsWindowMillis = 5_000;

    int holStreams = 50;
    long holWarmMillis = 1_500;
    long holWindowMillis = 5_000;

    int abortStreams = 40;

    long slowBytesPerSecond = 128L << 20;
    long slowBytes = 10_000_000_000L;  // the issue's 10 GB ...
    long slowMaxMillis = 15_000;       // ... bounded in time: see docs/performance.md

    // Figure 6's idle readings: when after a pair is up (MemWatch: the settling times the findings measured).
    Duration idleSettle = MemWatch.IDLE_SETTLE;
    Duration idleSettled = MemWatch.IDLE_SETTLED;

    // What users run (the package launchers' serve and run): JvmDefaults.MEMORY_OPTIONS, a compile-time constant
    // that javac copies here (the programs' classes are on the runner's compile class path only).
    List<String> serverJvmOptions = new ArrayList<>(jvmOptions(JvmDefaults.MEMORY_OPTIONS));
    List<String> gatewayJvmExtra = new ArrayList<>();
    /** The launchers run the ingress C1 only (finding 36); --ingress-jvm adds after it, so its flags win. */
    static final List<String> INGRESS_JVM_DEFAULT = jvmOptions(JvmDefaults.INGRESS_COMPILER_OPTIONS);
    List<String> ingressJvmExtra = new ArrayList<>(INGRESS_JVM_DEFAULT);
    boolean keepTemp;
    boolean smoke;
    // -XX:NativeMemoryTracking=summary on gateway and ingress, and jcmd VM.native_memory at the end of each memory
    // phase. Opt-in: the tracking costs memory of its own, which would inflate the RSS compared with the peer's.
    boolean nmt;
    long waitIdleSeconds;

    static Config smoke() {
        Config c = new Config();
        c.smoke = true;
        c.bulkBytes = 16L << 20;
        c.bulkWarmBytes = 4L << 20;
        c.bulkWarmMillis = 0;
        c.bulkReps = 1;
        c.rounds = 2; // so that the earlier rounds' code (fresh processes per round, the medians) runs too
        c.pingWarm = 100;
        c.pingCount = 300;
        c.openWarm = 5;
        c.openCount = 20;
        c.streams = 40;
        c.streamsWarmMillis = 200;
        c.streamsWindowMillis = 500;
        c.holStreams = 8;
        c.holWarmMillis = 200;
        c.holWindowMillis = 500;
        c.slowBytes = 64L << 20;
        c.slowMaxMillis = 1_000;
        c.abortStreams = 0;
        c.nmt = false;
        // The idle readings' code runs, without the settling a figure needs: 15 s of waiting per path was half
        // of this smoke run's time in CI.
        c.idleSettle = Duration.ofSeconds(1);
        c.idleSettled = Duration.ofSeconds(2);
        c.pageWarm = 0;   // one page load per path, interleaved as in a full run (Chromium and Vite, as CI has)
        c.pageLoads = 1;
        c.pageSteadyWarm = 0; // and the second series right after, so that its code runs too
        // dt: CI runs the Dev Tunnels peer's programs too (bench/devtunnels; node and npm are required), mux
        // the protocol's floor pair, and ws-floor the ingress in front of the floor's environment side.
        c.paths = new ArrayList<>(List.of("direct", "dt", "ws", "mux", "ws-floor"));
        return c;
    }

    static Config parse(String[] args) {
        Config c = Arrays.asList(args).contains("--smoke") ? smoke() : new Config();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--smoke" -> { }
                case "--root" -> c.root = Path.of(args[++i]).toAbsolutePath().normalize();
                case "--json" -> c.jsonOut = Path.of(args[++i]);
                case "--paths" -> c.paths = new ArrayList<>(List.of(args[++i].split(",")));
                case "--figures" -> c.figures = new ArrayList<>(List.of(args[++i].split(",")));
                case "--rounds" -> c.rounds = Integer.parseInt(args[++i]);
                case "--page-loads" -> c.pageLoads = Integer.parseInt(args[++i]);
                case "--page-warm" -> c.pageWarm = Integer.parseInt(args[++i]);
                case "--page-steady-warm" -> c.pageSteadyWarm = Integer.parseInt(args[++i]);
                case "--no-page-relays" -> c.pageRelays = false;
                case "--bulk-mib" -> c.bulkBytes = Long.parseLong(args[++i]) << 20;
                case "--bulk-reps" -> c.bulkReps = Integer.parseInt(args[++i]);
                case "--bulk-warm-seconds" -> c.bulkWarmMillis = Long.parseLong(args[++i]) * 1000;
                case "--pingpong" -> c.pingCount = Integer.parseInt(args[++i]);
                case "--opens" -> c.openCount = Integer.parseInt(args[++i]);
                case "--open-warm" -> c.openWarm = Integer.parseInt(args[++i]);
                case "--open-warm-seconds" -> c.openWarmMaxMillis = Long.parseLong(args[++i]) * 1000;
                case "--streams" -> c.streams = Integer.parseInt(args[++i]);
                case "--hol-streams" -> c.holStreams = Integer.parseInt(args[++i]);
                case "--window-ms" -> {
                    long w = Long.parseLong(args[++i]);
                    c.streamsWindowMillis = w;
                    c.holWindowMillis = w;
                }
                case "--slow-mib-per-s" -> c.slowBytesPerSecond = Long.parseLong(args[++i]) << 20;
                case "--slow-seconds" -> c.slowMaxMillis = Long.parseLong(args[++i]) * 1000;
                case "--pool" -> c.pool = Integer.parseInt(args[++i]);
                case "--ingress-io-threads" -> c.ingressIoThreads = Integer.parseInt(args[++i]);
                case "--abort-streams" -> c.abortStreams = Integer.parseInt(args[++i]);
                case "--server-jvm" -> c.serverJvmOptions = new ArrayList<>(jvmOptions(args[++i]));
                case "--gateway-jvm" -> c.gatewayJvmExtra.addAll(jvmOptions(args[++i]));
                case "--ingress-jvm" -> c.ingressJvmExtra.addAll(jvmOptions(args[++i]));
                case "--keep-temp" -> c.keepTemp = true;
                case "--nmt" -> c.nmt = true;
                case "--no-nmt" -> c.nmt = false;
                case "--wait-idle" -> c.waitIdleSeconds = Long.parseLong(args[++i]);
                case "-h", "--help" -> {
                    System.out.println(usage());
                    System.exit(0);
                }
                default -> throw new IllegalArgumentException("unknown option " + a + "\n" + usage());
            }
        }
        for (String path : c.paths) {
            if (!BenchRunner.ORDER.contains(path)) { // a misspelt path would otherwise be measured by nobody
                throw new IllegalArgumentException("unknown path " + path + " in --paths\n" + usage());
            }
        }
        if (c.rounds < 1) {
            throw new IllegalArgumentException("--rounds must be at least 1, got " + c.rounds);
        }
        if (c.jsonOut == null) {
            c.jsonOut = c.root.resolve("benchmarks/target/bench-results.json");
        }
        return c;
    }

    /**
     * JVM options given as one string, split at whitespace. A blank string means none: passed on as an empty
     * argument, {@code java} would take it for the main class and exit.
     */
    static List<String> jvmOptions(String options) {
        String trimmed = options.trim();
        return trimmed.isEmpty() ? List.of() : List.of(trimmed.split("\\s+"));
    }

    static String usage() {
        return """
                usage: bench/run.sh [options]   (java -jar benchmarks/target/benchmarks.jar [options])
                  --smoke                 tiny sizes, direct, dt, ws, mux and ws-floor only, one page load
                          each (proves the runner works; ~90 s)
                  --paths LIST            subset of direct,ssh,dt,dt-aes,ws,wss,mux,mux-tls,mux-proxy
                                          and ws-floor (default: all but ws-floor): dt and dt-aes are
                                          Microsoft's Dev Tunnels SSH stack (Node, bench/devtunnels, npm ci
                                          on first use) without a cipher and with aes256-gcm; mux and
                                          mux-tls are mux-protocol alone forwarding the ports over ws:// and
                                          wss:// (the design's floor: no grants, proxy, audit or metrics;
                                          figures 1-3 and idle RSS only, and mux the page loads);
                                          mux-proxy is mux over ws:// with a CONNECT answered in front of
                                          each stream, as the ingress does (figures 1-3 and idle RSS only);
                                          ws-floor is the ingress in front of mux's environment side instead
                                          of the gateway (figures 1-3, idle RSS and the page loads; beside
                                          ws, mux-proxy and mux it splits the open's and the page load's
                                          cost between gateway and ingress)
                  --figures LIST          subset of bulk,pingpong,open,slow,hol,concurrent,page,abort (default: all)
                  --rounds N              rounds of figures 1-3 (bulk, ping-pong, stream open), every path
                                          started afresh in each and the paths in turn; each value is the
                                          median over the rounds, every round's in the JSON and under the
                                          table (default 3; --smoke: 2). The last round runs every figure
                  --page-loads N          measured cold page loads per path for figure 7 (default 5; after all
                          other figures, one load per path in turn)
                  --page-warm N           unmeasured rounds of page loads first (default 2)
                  --page-steady-warm N    then N more unmeasured rounds and a second series of --page-loads
                                          loads, through gateway and ingress that have compiled their
                                          request path (default 40; -1: no second series)
                  --no-page-relays        figure 7's rounds without the loads through one and two nginx
                                          HTTP proxies that show what any proxy costs here (needs nginx)
                  --bulk-mib N            bytes per bulk repetition and direction (default 1024)
                  --bulk-reps N           bulk repetitions, median reported (default 3)
                  --bulk-warm-seconds N   unmeasured 256 MiB transfers, alternating directions, for at least
                                          N s before the bulk repetitions (default 10; the first of them is
                                          reported as the cold figure)
                  --pingpong N            measured 64-byte round trips (default 20000)
                  --opens N               measured stream opens (default 500)
                  --open-warm N           unmeasured stream opens first (default 1000)
                  --open-warm-seconds N   time bound of those warm-up opens (default 8)
                  --streams N             concurrent streams of figure 4 (default 1000)
                  --hol-streams N         transferring streams of figure 5 (default 50)
                  --window-ms N           measurement window of figures 4 and 5 (default 5000)
                  --slow-mib-per-s N      slow reader's pace (default 128)
                  --slow-seconds N        slow reader's time bound (default 15)
                  --pool N                ingress --pool (default: the ingress's own, @POOL@)
                  --ingress-io-threads N  ingress --io-threads, and the floor's desktop-side event loops
                                          (default: the ingress's own, @IO_THREADS@)
                  --abort-streams N       busy streams closed at once by the robustness probe (default 40; 0: skip)
                  --server-jvm "OPTS"     JVM options of gateway and ingress (and of the floor's two sides)
                                          (default: what the package launchers run,
                                          "@MEMORY@")
                  --gateway-jvm "OPTS"    extra JVM options, gateway (and floor env side) only (e.g.
                                          -Dptun.transport=nio)
                  --ingress-jvm "OPTS"    extra JVM options, ingress (and floor desktop side) only, after
                                          its default @INGRESS@
                                          (C1 only, as the launchers run it; -XX:TieredStopAtLevel=4: C2 too)
                  --json FILE             results (default benchmarks/target/bench-results.json)
                  --root DIR              the project checkout (default: found from the working directory)
                  --keep-temp             keep the temporary directory with every process's log
                  --nmt                   run gateway and ingress with -XX:NativeMemoryTracking=summary and
                                          take jcmd native-memory snapshots per memory phase (off by
                                          default: the tracking's own memory would count in the RSS)
                  --no-nmt                no native-memory tracking (the default; kept for old scripts)
                  --wait-idle N           first wait up to N s for the 1-minute load average to drop below 1
                  --open-floor            instead of the benchmark, figure 3's floor through plain relays
                          (bench/open-floor.sh; --open-floor --help for its options)
                  --memory-floor          instead of the benchmark, figure 6's idle floor: idle JVM and Node
                          beside the idle tunnel and peer (bench/memory-floor.sh; --memory-floor --help)
                """.replace("@MEMORY@", JvmDefaults.MEMORY_OPTIONS)
                .replace("@IO_THREADS@", String.valueOf(IngressConfig.DEFAULT_IO_THREADS))
                .replace("@POOL@", String.valueOf(IngressConfig.DEFAULT_POOL))
                .replace("@INGRESS@", JvmDefaults.INGRESS_COMPILER_OPTIONS);
    }

    private static Path findRoot() {
        Path p = Path.of("").toAbsolutePath();
        for (Path q = p; q != null; q = q.getParent()) {
            if (Files.isDirectory(q.resolve("env-gateway")) && Files.isDirectory(q.resolve("desktop-ingress"))) {
                return q;
            }
        }
        return p;
    }
}
