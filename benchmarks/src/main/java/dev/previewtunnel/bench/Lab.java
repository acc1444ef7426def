package dev.previewtunnel.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
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
    Proc target;
    List<Integer> targetPorts;
    Path tokenFile;
    Path grantFile;
    Path cert;
    Path key;
    int vitePort;          // figure 7's dev server; 0 when figure 7 is skipped
    String pageSkipReason;
    Proc vite;
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

    /** Target JVM (its own process), then keys, token, one grant per target port (each its own session), TLS. */
    void start() {
        target = startTarget(javaBin, absoluteClassPath(), config.targetPorts, dir);
        targetPorts = targetPorts(target);

        Path keys = dir.resolve("keys");
        gatewayCli("keys", "init", "--dir", keys.toString());
        // The CLI's JVM starts take most of the setup time: issue the token and the grants in parallel.
        CompletableFuture<String> token = CompletableFuture.supplyAsync(() ->
                gatewayCli("token", "issue", "--keys", keys.toString(), "--env", ENV, "--ttl", "2h"));
        // One grant per target port, each for its own session: the gateway's default limits are per session
        // (512 concurrent streams, 200 opens/s, burst 1000), so 1,000 streams need more than one session.
        List<CompletableFuture<String>> grants = new ArrayList<>(IntStream.range(0, targetPorts.size()).mapToObj(i ->
                CompletableFuture.supplyAsync(() -> gatewayCli("grant", "issue", "--keys", keys.toString(),
                        "--env", ENV, "--session", "bench-" + i, "--target", "localhost:" + targetPorts.get(i),
                        "--ttl", "15m"))).toList());
        Path nodeModules = null;
        if (config.figures.contains("page")) {
            String[] why = new String[1];
            nodeModules = PageLoad.viteNodeModules(config.root, why);
            pageSkipReason = why[0];
            if (nodeModules != null) {
                try {
                    vitePort = freePort();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
                grants.add(CompletableFuture.supplyAsync(() -> gatewayCli("grant", "issue", "--keys",
                        keys.toString(), "--env", ENV, "--session", "bench-vite", "--target",
                        "localhost:" + vitePort, "--ttl", "15m")));
            }
        } else {
            pageSkipReason = "not selected (--figures)";
        }
        CompletableFuture<Void> tls = config.paths.contains("wss")
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
    static Proc startTarget(String javaBin, String classPath, int ports, Path dir) {
        return Proc.start("target", List.of(javaBin, "-Xmx256m", "-XX:+UseParallelGC", "-cp", classPath,
                BenchTarget.class.getName(), "--ports", String.valueOf(ports)), dir,
                n -> "ready".equals(n.path("event").asText()));
    }

    static List<Integer> targetPorts(Proc target) {
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
        String out = Proc.run(cmd, dir, Duration.ofSeconds(60));
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
        cert = dir.resolve("gateway-cert.pem");
        key = dir.resolve("gateway-key.pem");
        Proc.run(List.of("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-nodes", "-keyout", key.toString(), "-out", cert.toString(), "-days", "2", "-subj",
                "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"), dir,
                Duration.ofSeconds(60));
        try {
            Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-------"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    Route directRoute() {
        return Route.plain("direct", "direct", targetPorts);
    }

    // ------------------------------------------------------------------------------------------------ tunnel

    /** A running gateway + ingress pair and the route through it. */
    record Tunnel(String key, Proc gateway, Proc ingress, Route route, String gatewayTransport,
                  InetSocketAddress proxy, String username, String password) implements AutoCloseable {
        @Override
        public void close() {
            // A profiling run (-XX:StartFlightRecording=filename=...) gets its recording: both CLIs halt the JVM
            // in their shutdown hook, before JFR's own dump-on-exit would run.
            for (Proc p : List.of(gateway, ingress)) {
                if (String.join(" ", p.process.info().arguments().map(List::of).orElse(List.of()))
                        .contains("StartFlightRecording")) {
                    try {
                        Proc.run(List.of("jcmd", String.valueOf(p.pid()), "JFR.dump"), null, Duration.ofSeconds(60));
                    } catch (RuntimeException e) {
                        System.err.println("JFR.dump failed for " + p.name + ": " + e.getMessage());
                    }
                }
            }
            ingress.close();
            gateway.close();
        }
    }

    Tunnel startTunnel(boolean tls) {
        String name = tls ? "wss" : "ws";
        List<String> jvm = new ArrayList<>(List.of(javaBin));
        jvm.addAll(config.serverJvmOptions);
        // As shipped (FatalErrors.JVM_FLAGS, spelled out: the runner jar has the programs' classes only at compile
        // time, env-gateway being a provided dependency): out of heap ends the process.
        jvm.add("-XX:+ExitOnOutOfMemoryError");
        List<String> gw = new ArrayList<>(jvm);
        gw.addAll(config.gatewayJvmExtra);
        gw.addAll(List.of("-jar", gatewayJar.toString(), "serve", "--keys", dir.resolve("keys").toString(),
                "--env", ENV, "--listen", "127.0.0.1:0"));
        if (tls) {
            gw.addAll(List.of("--tls-cert", cert.toString(), "--tls-key", key.toString()));
        }
        Proc gateway = Proc.start("gateway-" + name, gw, dir, n -> "ready".equals(n.path("event").asText()));
        Proc ingress = null;
        try {
            JsonNode gReady = gateway.awaitReady(Duration.ofSeconds(60));
            String url = gReady.get("url").asText();
            List<String> in = new ArrayList<>(jvm);
            in.addAll(config.ingressJvmExtra);
            in.addAll(List.of("-jar", ingressJar.toString(), "run", "--gateway", url,
                    "--token-file", tokenFile.toString(), "--grant-file", grantFile.toString(),
                    "--listen", "127.0.0.1:0", "--pool", String.valueOf(config.pool),
                    "--state-dir", dir.resolve("state-" + name).toString(), "--session-id", "bench-" + name));
            if (tls) {
                in.addAll(List.of("--gateway-ca", cert.toString()));
            }
            ingress = Proc.start("ingress-" + name, in, dir, n -> "ready".equals(n.path("event").asText()));
            JsonNode iReady = ingress.awaitReady(Duration.ofSeconds(60));
            String[] proxy = iReady.get("proxy").asText().split(":");
            JsonNode creds = JSON.readTree(Path.of(iReady.get("credentialsFile").asText()).toFile());
            InetSocketAddress proxyAddress = new InetSocketAddress(proxy[0], Integer.parseInt(proxy[1]));
            String user = creds.get("username").asText();
            String password = creds.get("password").asText();
            Route route = Route.proxied(name, "tunnel " + name + "://", proxyAddress, targetPorts, user, password);
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

    // ------------------------------------------------------------------------------------------------ ssh -L

    /** {@code sshd} on a loopback port and {@code ssh -N -L} forwarding one local port per target port. */
    record Ssh(Proc sshd, Proc ssh, Route route, String version, String cipher) implements AutoCloseable {
        @Override
        public void close() {
            ssh.close();
            sshd.close();
        }
    }

    Ssh startSsh() throws IOException {
        Path sd = Files.createDirectories(dir.resolve("ssh"));
        Path hostKey = sd.resolve("host_ed25519");
        Path userKey = sd.resolve("user_ed25519");
        Proc.run(List.of("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "bench-host", "-f",
                hostKey.toString()), sd, Duration.ofSeconds(30));
        Proc.run(List.of("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "bench-user", "-f",
                userKey.toString()), sd, Duration.ofSeconds(30));
        Files.copy(sd.resolve("user_ed25519.pub"), sd.resolve("authorized_keys"));
        String user = System.getProperty("user.name");
        if ("root".equals(user)) {
            Files.createDirectories(Path.of("/run/sshd")); // sshd as root insists on its privsep directory
        }
        int port = freePort();
        Path conf = sd.resolve("sshd_config");
        Files.writeString(conf, """
                Port %2$d
                ListenAddress 127.0.0.1
                HostKey %1$s/host_ed25519
                PidFile %1$s/sshd.pid
                AuthorizedKeysFile %1$s/authorized_keys
                UsePAM no
                StrictModes no
                PermitRootLogin prohibit-password
                PubkeyAuthentication yes
                PasswordAuthentication no
                KbdInteractiveAuthentication no
                AllowTcpForwarding local
                X11Forwarding no
                PrintMotd no
                LogLevel ERROR
                """.formatted(sd, port));
        Proc sshd = Proc.start("sshd", List.of("/usr/sbin/sshd", "-D", "-e", "-f", conf.toString()), dir, null);
        Proc ssh = null;
        try {
            awaitPort(port, Duration.ofSeconds(20), sshd);
            List<String> common = List.of("-F", "/dev/null", "-i", userKey.toString(), "-p", String.valueOf(port),
                    "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new",
                    "-o", "UserKnownHostsFile=" + sd.resolve("known_hosts"));
            // One short verbose login first: it records the host key and tells which cipher OpenSSH negotiates.
            List<String> probe = new ArrayList<>(List.of("ssh", "-v"));
            probe.addAll(common);
            probe.addAll(List.of(user + "@127.0.0.1", "true"));
            String probeOut = Proc.run(probe, sd, Duration.ofSeconds(30));
            String cipher = probeOut.lines().filter(l -> l.contains("kex: server->client cipher:")).findFirst()
                    .map(l -> l.replaceAll(".*cipher: (\\S+).*", "$1")).orElse("?");
            String version = probeOut.lines().filter(l -> l.startsWith("OpenSSH_")).findFirst().orElse("?")
                    .split(",")[0];
            List<Integer> local = new ArrayList<>();
            List<String> cmd = new ArrayList<>(List.of("ssh", "-N"));
            cmd.addAll(common);
            cmd.addAll(List.of("-o", "ExitOnForwardFailure=yes", "-o", "ServerAliveInterval=15"));
            for (int tp : targetPorts) {
                int lp = freePort();
                local.add(lp);
                cmd.addAll(List.of("-L", "127.0.0.1:" + lp + ":127.0.0.1:" + tp));
            }
            cmd.add(user + "@127.0.0.1");
            ssh = Proc.start("ssh", cmd, dir, null);
            for (int lp : local) {
                awaitPort(lp, Duration.ofSeconds(30), ssh);
            }
            Route route = Route.plain("ssh", "ssh -L", local);
            awaitRoute(route, Duration.ofSeconds(20));
            return new Ssh(sshd, ssh, route, version, cipher);
        } catch (RuntimeException | IOException e) {
            if (ssh != null) {
                ssh.close();
            }
            sshd.close();
            throw e;
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    static void awaitPort(int port, Duration timeout, Proc owner) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 500);
                return;
            } catch (IOException e) {
                if (!owner.process.isAlive()) {
                    throw new IllegalStateException(owner.name + " exited: " + owner.tail(2000));
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(owner.name + " not listening on " + port + ": "
                            + owner.tail(2000));
                }
                sleep(50);
            }
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
            deleteTree(dir);
        }
    }

    static void deleteTree(Path root) {
        try (var walk = Files.walk(root)) {
            walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    // best effort
                }
            });
        } catch (IOException e) {
            // best effort
        }
    }
}
