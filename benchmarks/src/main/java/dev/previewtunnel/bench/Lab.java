package dev.previewtunnel.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.mux.local.NettyDefaults;
import dev.previewtunnel.spikes.lab.LabProcess;
import dev.previewtunnel.spikes.lab.Processes;
import dev.previewtunnel.spikes.lab.SelfSignedCertificate;
import dev.previewtunnel.spikes.lab.Sshd;
import org.slf4j.helpers.NOP_FallbackServiceProvider;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;
import java.util.stream.IntStream;

/**
 * The processes of one benchmark run, all on loopback and all in one temporary directory: the target, the key
 * directory, token and grants (made with the real {@code env-gateway} CLI), a self-signed certificate for
 * {@code wss://}, {@code sshd} + {@code ssh -L}, and a gateway + ingress pair per tunnel transport.
 */
final class Lab implements AutoCloseable {
    static final String ENV = "bench";
    private static final ObjectMapper JSON = new ObjectMapper();

    final Config config;
    final Path dir;
    final Path gatewayJar;
    final Path ingressJar;
    final String javaBin;
    /** The runner's class path, absolute, its jars privately copied: for the lab's own JVMs (target, floors). */
    String classPath;
    LabProcess target;
    List<Integer> targetPorts;
    Path tokenFile;
    Path grantFile;
    Path cert;
    Path key;
    int vitePort;          // figure 7's dev server; 0 when figure 7 is skipped
    String pageSkipReason;
    LabProcess vite;
    PageLoad browser;

    Lab(Config config) throws IOException {
        this.config = config;
        this.dir = Files.createTempDirectory("ptun-bench");
        this.javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Path built = config.root.resolve("env-gateway/target/env-gateway.jar");
        Path builtIngress = config.root.resolve("desktop-ingress/target/desktop-ingress.jar");
        for (Path jar : List.of(built, builtIngress)) {
            if (!Files.isRegularFile(jar)) {
                throw new IllegalStateException(jar + " is missing: build first (mvn -B -q -DskipTests package)");
            }
        }
        // Private copies: a build running meanwhile in the checkout must not swap a jar under a running process.
        this.gatewayJar = Files.copy(built, dir.resolve("env-gateway.jar"));
        this.ingressJar = Files.copy(builtIngress, dir.resolve("desktop-ingress.jar"));
    }

    private static final String GRANT_TTL = "2h";
    /** The line every process of the lab announces itself with: {"event":"ready", ...}. */
    static final Predicate<JsonNode> READY = n -> "ready".equals(n.path("event").asText());

    /** Target JVM (its own process), then keys, token, one grant per target port (each its own session), TLS. */
    void start() {
        classPath = absoluteClassPath();
        target = startTarget(javaBin, classPath, config.targetPorts, dir);
        targetPorts = targetPorts(target);

        Path keys = dir.resolve("keys");
        gatewayCli("keys", "init", "--dir", keys.toString());
        // The CLI's JVM starts take most of the setup time: issue the token and the grants in parallel.
        CompletableFuture<String> token = CompletableFuture.supplyAsync(() ->
                gatewayCli("token", "issue", "--keys", keys.toString(), "--env", ENV, "--ttl", "2h"));
        // One grant per target port, each for its own session: the gateway's default limits are per session
        // (512 concurrent streams, 200 opens/s, burst 1000), so 1,000 streams need more than one session.
        // Two hours, the gateway told to accept that (its default cap is 15 m): with the peer's paths a full run
        // lasts over 15 minutes, and grants of 15 m failed its last page loads ("the page did not run all its
        // modules": grant_expired in the gateway's audit; reproduced with 40 s grants).
        List<CompletableFuture<String>> grants = new ArrayList<>(IntStream.range(0, targetPorts.size()).mapToObj(i ->
                CompletableFuture.supplyAsync(() -> gatewayCli("grant", "issue", "--keys", keys.toString(),
                        "--env", ENV, "--session", "bench-" + i, "--target", "localhost:" + targetPorts.get(i),
                        "--ttl", GRANT_TTL))).toList());
        Path nodeModules = null;
        if (config.figures.contains("page")) {
            String[] why = new String[1];
            nodeModules = PageLoad.viteNodeModules(config.root, why);
            pageSkipReason = why[0];
            if (nodeModules != null) {
                vitePort = Processes.freePort();
                grants.add(CompletableFuture.supplyAsync(() -> gatewayCli("grant", "issue", "--keys",
                        keys.toString(), "--env", ENV, "--session", "bench-vite", "--target",
                        "localhost:" + vitePort, "--ttl", GRANT_TTL)));
            }
        } else {
            pageSkipReason = "not selected (--figures)";
        }
        CompletableFuture<Void> tls = config.paths.contains("wss") || config.paths.contains("mux-tls")
                ? CompletableFuture.runAsync(this::makeCertificate) : CompletableFuture.completedFuture(null);
        try {
            tokenFile = secretFile("token", token.join().strip() + "\n");
            StringBuilder lines = new StringBuilder();
            for (CompletableFuture<String> g : grants) {
                lines.append(g.join().strip()).append('\n');
            }
            grantFile = secretFile("grants", lines.toString());
            tls.join();
            if (nodeModules != null) {
                Path app = PageLoad.writeApp(dir, nodeModules);
                vite = PageLoad.startVite(app, vitePort, dir);
                browser = PageLoad.launch(dir);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@link BenchTarget} in its own JVM on {@code ports} ports; {@link #targetPorts} waits for its ready line. */
    static LabProcess startTarget(String javaBin, String classPath, int ports, Path dir) {
        return LabProcess.start("target", List.of(javaBin, "-Xmx256m", "-XX:+UseParallelGC", "-cp", classPath,
                BenchTarget.class.getName(), "--ports", String.valueOf(ports)), dir, READY);
    }

    static List<Integer> targetPorts(LabProcess target) {
        List<Integer> ports = new ArrayList<>();
        target.awaitReady(Duration.ofSeconds(30)).get("ports").forEach(p -> ports.add(p.asInt()));
        return ports;
    }

    /** The runner's class path with absolute entries: the target JVM runs in the temporary directory. */
    private String absoluteClassPath() {
        List<String> out = new ArrayList<>();
        int n = 0;
        for (String e : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            Path p = Path.of(e).toAbsolutePath();
            if (Files.isRegularFile(p) && p.toString().endsWith(".jar")) {
                try { // a private copy, as for the gateway and ingress jars
                    p = Files.copy(p, dir.resolve("cp-" + (n++) + "-" + p.getFileName()));
                } catch (IOException x) {
                    throw new UncheckedIOException(x);
                }
            }
            out.add(p.toString());
        }
        return String.join(java.io.File.pathSeparator, out);
    }

    private String gatewayCli(String... args) {
        List<String> cmd = new ArrayList<>(List.of(javaBin, "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-jar",
                gatewayJar.toString()));
        cmd.addAll(List.of(args));
        String out = Processes.runOk(cmd, dir, Duration.ofSeconds(60)).output();
        // stdout and stderr are merged (logs are JSON lines): a token or grant is the line that is a JWT.
        List<String> jwts = out.lines().map(String::strip).filter(l -> l.startsWith("eyJ")).toList();
        return jwts.isEmpty() ? out : jwts.get(jwts.size() - 1);
    }

    private Path secretFile(String name, String content) throws IOException {
        Path p = dir.resolve(name);
        Files.writeString(p, content, StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rw-------"));
        return p;
    }

    private void makeCertificate() {
        SelfSignedCertificate tls = SelfSignedCertificate.create(dir);
        cert = tls.certPem();
        key = tls.keyPem();
    }

    Route directRoute() {
        return Route.plain("direct", "direct", targetPorts);
    }

    // ------------------------------------------------------------------------------------------------ tunnel

    /**
     * A path that figure 7 loads pages through, its log checked after the loads: a tunnel kept running after its
     * figures (warm, as a long-running one is), or a Dev Tunnels peer started afresh for the loads.
     */
    interface PagePath extends AutoCloseable {
        String key();

        PageLoad.Via pageVia();

        void putLogErrors(Map<String, Object> r);

        @Override
        void close();
    }

    /** A running gateway + ingress pair and the route through it. */
    record Tunnel(String key, LabProcess gateway, LabProcess ingress, Route route, String gatewayTransport,
                  InetSocketAddress proxy, String username, String password) implements PagePath {
        /** Two JVMs: their native-memory summary too when the run asks for it ({@code --nmt}). */
        MemWatch memWatch(boolean nmt) {
            return new MemWatch(gateway, ingress, true, nmt);
        }

        @Override
        public PageLoad.Via pageVia() {
            return new PageLoad.Via(proxy, username, password, gateway, ingress);
        }

        @Override
        public void putLogErrors(Map<String, Object> r) {
            TunnelLogs.putLogErrors(r, this);
        }

        @Override
        public void close() {
            // A profiling run (-XX:StartFlightRecording=filename=...) gets its recording: both CLIs halt the JVM
            // in their shutdown hook, before JFR's own dump-on-exit would run.
            for (LabProcess p : List.of(gateway, ingress)) {
                if (String.join(" ", p.process().info().arguments().map(List::of).orElse(List.of()))
                        .contains("StartFlightRecording")) {
                    try {
                        Processes.runOk(List.of("jcmd", String.valueOf(p.pid()), "JFR.dump"), null,
                                Duration.ofSeconds(60));
                    } catch (RuntimeException e) {
                        System.err.println("JFR.dump failed for " + p.name() + ": " + e.getMessage());
                    }
                }
            }
            ingress.close();
            gateway.close();
        }
    }

    Tunnel startTunnel(boolean tls) {
        return startTunnel(tls, "");
    }

    /** {@code suffix} names this pair's logs and state directory apart from another round's ({@link Rounds}). */
    Tunnel startTunnel(boolean tls, String suffix) {
        String name = tls ? "wss" : "ws";
        List<String> gw = new ArrayList<>(serverJvm());
        gw.addAll(config.gatewayJvmExtra);
        // The audit on stderr (into the process's log file) as when the figures in docs/performance.md were taken,
        // and not in the user's default state directory: the gateway is given none.
        gw.addAll(List.of("-jar", gatewayJar.toString(), "serve", "--keys", dir.resolve("keys").toString(),
                "--env", ENV, "--listen", "127.0.0.1:0", "--audit-file", "-", "--max-grant-lifetime", GRANT_TTL));
        if (tls) {
            gw.addAll(List.of("--tls-cert", cert.toString(), "--tls-key", key.toString()));
        }
        return startIngress(name, "tunnel " + name + "://", tls, suffix,
                LabProcess.start("gateway-" + name + suffix, gw, dir, READY));
    }

    /**
     * The ws-floor path (finding 53): the ingress, as {@link #startTunnel} runs it, in front of the floor's
     * environment side ({@link MuxFloor.Env}) instead of the gateway, which accepts the lab's connection token and
     * dials each stream's port without a grant check, limits, metrics or audit. Beside {@code ws} and
     * {@code mux-proxy} it splits the tunnel's open between its two programs, beside {@code ws} and {@code mux} the
     * page load (finding 63: its environment side then dials Vite's port too, which the lab's grants name).
     */
    Tunnel startIngressOnFloor(String suffix) {
        String token;
        try {
            token = Files.readString(tokenFile).strip();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> envCmd = floorEnvCommand(false);
        if (vitePort > 0) {
            envCmd.add(String.valueOf(vitePort));
        }
        LabProcess envSide = LabProcess.start("ws-floor-env" + suffix, envCmd, Map.of(MuxFloor.TOKEN_ENV, token),
                dir, READY);
        return startIngress("ws-floor", "ingress + mux-protocol's env side", false, suffix, envSide);
    }

    /** Starts the ingress against {@code gateway} (started, not yet ready); closes it if the ingress fails. */
    private Tunnel startIngress(String name, String label, boolean tls, String suffix, LabProcess gateway) {
        List<String> jvm = serverJvm();
        LabProcess ingress = null;
        try {
            JsonNode gReady = gateway.awaitReady(Duration.ofSeconds(60));
            String url = gReady.get("url").asText();
            List<String> in = new ArrayList<>(jvm);
            in.addAll(config.ingressJvmExtra);
            in.addAll(List.of("-jar", ingressJar.toString(), "run", "--gateway", url,
                    "--token-file", tokenFile.toString(), "--grant-file", grantFile.toString(),
                    "--listen", "127.0.0.1:0", "--pool", String.valueOf(config.pool),
                    "--io-threads", String.valueOf(config.ingressIoThreads),
                    "--state-dir", dir.resolve("state-" + name + suffix).toString(), "--session-id", "bench-" + name,
                    "--audit-file", "-"));
            if (tls) {
                in.addAll(List.of("--gateway-ca", cert.toString()));
            }
            ingress = LabProcess.start("ingress-" + name + suffix, in, dir, READY);
            JsonNode iReady = ingress.awaitReady(Duration.ofSeconds(60));
            String[] proxy = iReady.get("proxy").asText().split(":");
            JsonNode creds = JSON.readTree(Path.of(iReady.get("credentialsFile").asText()).toFile());
            InetSocketAddress proxyAddress = new InetSocketAddress(proxy[0], Integer.parseInt(proxy[1]));
            String user = creds.get("username").asText();
            String password = creds.get("password").asText();
            Route route = Route.proxied(name, label, proxyAddress, targetPorts, user, password);
            awaitRoute(route, Duration.ofSeconds(30));
            return new Tunnel(name, gateway, ingress, route, gReady.path("transport").asText(), proxyAddress, user,
                    password);
        } catch (IOException | RuntimeException e) {
            if (ingress != null) {
                ingress.close();
            }
            gateway.close();
            throw e instanceof IOException io ? new UncheckedIOException(io) : (RuntimeException) e;
        }
    }

    /**
     * {@code java} and the options every gateway and ingress of the lab runs with: --server-jvm (by default what
     * the launchers run), native memory tracking under --nmt, and, as shipped (FatalErrors.JVM_FLAGS, spelled out:
     * the runner jar has the programs' classes only at compile time, env-gateway being a provided dependency),
     * out of heap ends the process. The floor's JVMs get the same ({@link #floorJvm}).
     */
    private List<String> serverJvm() {
        List<String> jvm = new ArrayList<>(List.of(javaBin));
        jvm.addAll(config.serverJvmOptions);
        if (config.nmt) {
            jvm.add("-XX:NativeMemoryTracking=summary");
        }
        jvm.add("-XX:+ExitOnOutOfMemoryError");
        return jvm;
    }

    /**
     * A floor JVM's command line up to its main class ({@link MuxFloor}, {@link MemoryFloor}): the programs'
     * options, and the Netty properties their mains set (finding 37), which the floor runs no main of theirs to
     * set; the runner's class path.
     */
    private List<String> floorJvm() {
        List<String> jvm = serverJvm();
        NettyDefaults.PROPERTIES.forEach((property, value) -> jvm.add("-D" + property + "=" + value));
        jvm.addAll(List.of("-cp", classPath));
        return jvm;
    }

    /** {@link #floorJvm}, SLF4J's no-op provider standing in for the logging backend the floor leaves out. */
    List<String> floorJvmWithoutLogging() {
        List<String> jvm = floorJvm();
        // A class literal, so that a wrong name cannot compile: until 2026-12-03 the property named a class that
        // does not exist, SLF4J fell back to its service loader, and the floor ran logback (finding 40).
        jvm.add(1, "-Dslf4j.provider=" + NOP_FallbackServiceProvider.class.getName());
        return jvm;
    }

    /** The floor's environment side, allowed to dial the target ports, with the gateway's extra JVM options. */
    private List<String> floorEnvCommand(boolean tls) {
        List<String> envCmd = floorJvmWithoutLogging();
        envCmd.addAll(1, config.gatewayJvmExtra);
        envCmd.add(MuxFloor.Env.class.getName());
        if (tls) { // the gateway's serve --tls-cert --tls-key, the same certificate
            envCmd.addAll(List.of("--tls", cert.toString(), key.toString()));
        }
        targetPorts.forEach(p -> envCmd.add(String.valueOf(p)));
        return envCmd;
    }

    /** The ingress does not wait for its tunnel connections: retry an open on every port until they work. */
    static void awaitRoute(Route route, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        IOException last = null;
        for (int port = 0; port < route.ports(); ) {
            try {
                route.open(port).close();
                port++;
                continue;
            } catch (IOException e) {
                last = e;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(route.label + " never carried a stream: " + last, last);
            }
            sleep(100);
        }
        sleep(500); // let the rest of the pool connect
    }

    // ------------------------------------------------------------------------------------------------ mux floor

    /**
     * {@code mux-protocol} alone as a port-forwarding pair ({@link MuxFloor}): the design's floor, measured as a path
     * of its own ({@code mux}, and {@code mux-tls} over wss:// with the gateway's certificate) beside the tunnel and
     * the peer, and idle by {@link MemoryFloor}.
     */
    record MuxPair(String key, LabProcess env, LabProcess desk, Route route, String pageUrl) implements PagePath {
        MemWatch memWatch(boolean nmt) {
            return new MemWatch(env, desk, true, nmt);
        }

        /** Figure 7 through the floor: Vite's port forwarded as the peer forwards it, no proxy in front. */
        @Override
        public PageLoad.Via pageVia() {
            return PageLoad.Via.direct(pageUrl, env, desk);
        }

        @Override
        public void putLogErrors(Map<String, Object> r) {
            TunnelLogs.putFloorLogErrors(r, List.of(env, desk));
        }

        @Override
        public void close() {
            desk.close();
            env.close();
        }
    }

    /**
     * Starts the pair with the JVM options the gateway and the ingress get ({@link #floorJvmWithoutLogging}): the
     * environment side the gateway's, the desktop side the ingress's (C1 only by default); SLF4J's no-op provider
     * stands in for the logging backend the floor leaves out. The token travels in the environment. {@code name}:
     * {@code mux} (over ws://), {@code mux-tls} (over wss://) or {@code mux-proxy} (over ws://, the desktop side
     * answering {@code CONNECT} on one port instead of forwarding ports, {@link MuxFloor.ConnectFront}: the floor
     * with the exchange the design puts in front of every stream, finding 52).
     */
    MuxPair startMuxFloor(String name, String suffix) {
        boolean tls = name.equals("mux-tls");
        boolean proxy = name.equals("mux-proxy");
        if (!tls && !proxy && !name.equals("mux")) {
            throw new IllegalArgumentException("not a floor path: " + name);
        }
        Map<String, String> token = Map.of(MuxFloor.TOKEN_ENV, MuxFloor.newToken());
        // mux (over ws://) also forwards Vite's port, last, for figure 7's loads through the floor (finding 61).
        boolean page = name.equals("mux") && vitePort > 0;
        List<String> envCmd = floorEnvCommand(tls);
        if (page) {
            envCmd.add(String.valueOf(vitePort));
        }
        LabProcess envSide = LabProcess.start(name + "-env" + suffix, envCmd, token, dir, READY);
        LabProcess desk = null;
        try {
            String url = envSide.awaitReady(Duration.ofSeconds(30)).get("url").asText();
            List<String> deskCmd = floorJvmWithoutLogging();
            deskCmd.addAll(1, config.ingressJvmExtra);
            deskCmd.add(MuxFloor.Desk.class.getName());
            deskCmd.add(url);
            if (tls) { // the ingress's --gateway-ca
                deskCmd.addAll(List.of("--ca", cert.toString()));
            }
            if (proxy) {
                deskCmd.add("--proxy");
            }
            deskCmd.addAll(List.of("--loops", String.valueOf(config.ingressIoThreads))); // the ingress's loops
            targetPorts.forEach(p -> deskCmd.add(String.valueOf(p)));
            if (page) {
                deskCmd.add(String.valueOf(vitePort));
            }
            desk = LabProcess.start(name + "-desk" + suffix, deskCmd, token, dir, READY);
            List<Integer> local = new ArrayList<>();
            JsonNode ready = desk.awaitReady(Duration.ofSeconds(30));
            ready.get("ports").forEach(n -> local.add(n.asInt()));
            String pageUrl = page ? "http://127.0.0.1:" + local.remove(local.size() - 1) + "/" : null;
            String label = "mux-protocol alone " + (tls ? "wss" : "ws") + "://";
            Route route = proxy
                    ? Route.proxied(name, label + " + CONNECT", new InetSocketAddress("127.0.0.1",
                            ready.get("proxy").asInt()), targetPorts, MuxFloor.ConnectFront.USER,
                            token.get(MuxFloor.TOKEN_ENV))
                    : Route.plain(name, label, local);
            awaitRoute(route, Duration.ofSeconds(30));
            return new MuxPair(name, envSide, desk, route, pageUrl);
        } catch (RuntimeException e) {
            if (desk != null) {
                desk.close();
            }
            envSide.close();
            throw e;
        }
    }

    // ------------------------------------------------------------------------------------------------ ssh -L

    /** The lab's {@code sshd} on a loopback port and {@code ssh -N -L} forwarding one local port per target port. */
    record Ssh(Sshd sshd, LabProcess ssh, Route route, String version, String cipher) implements AutoCloseable {
        /** sshd's tree on the environment side, ssh on the desktop side; neither a JVM. */
        MemWatch memWatch() {
            return new MemWatch(sshd.process(), ssh, false, false);
        }

        @Override
        public void close() {
            ssh.close();
            sshd.close();
        }
    }

    /** {@code suffix} gives this sshd its own directory and this ssh its own log ({@link Rounds}). */
    Ssh startSsh(String suffix) throws IOException {
        Sshd sshd = Sshd.start(Files.createDirectories(dir.resolve("ssh" + suffix)), "ERROR");
        LabProcess ssh = null;
        try {
            // One short verbose login first: it records the host key and tells which cipher OpenSSH negotiates.
            List<String> probe = sshd.ssh(List.of("-v"));
            probe.addAll(List.of(sshd.destination(), "true"));
            String probeOut = Processes.runOk(probe, dir, Duration.ofSeconds(30)).output();
            String cipher = probeOut.lines().filter(l -> l.contains("kex: server->client cipher:")).findFirst()
                    .map(l -> l.replaceAll(".*cipher: (\\S+).*", "$1")).orElse("?");
            String version = probeOut.lines().filter(l -> l.startsWith("OpenSSH_")).findFirst().orElse("?")
                    .split(",")[0];
            List<Integer> local = new ArrayList<>();
            for (int i = 0; i < targetPorts.size(); i++) {
                local.add(Processes.freePort());
            }
            ssh = sshd.forward("ssh" + suffix, local, targetPorts);
            Route route = Route.plain("ssh", "ssh -L", local);
            awaitRoute(route, Duration.ofSeconds(20));
            return new Ssh(sshd, ssh, route, version, cipher);
        } catch (RuntimeException | Error e) {
            if (ssh != null) {
                ssh.close();
            }
            sshd.close();
            throw e;
        }
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    @Override
    public void close() {
        if (browser != null) {
            browser.close();
        }
        if (vite != null) {
            vite.close();
        }
        if (target != null) {
            target.close();
        }
        if (!config.keepTemp) {
            Processes.deleteTree(dir);
        }
    }
}
