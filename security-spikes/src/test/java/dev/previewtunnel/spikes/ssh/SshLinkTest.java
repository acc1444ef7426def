package dev.previewtunnel.spikes.ssh;

import dev.previewtunnel.ingress.ssh.GatewayControl;
import dev.previewtunnel.ingress.ssh.GatewayJar;
import dev.previewtunnel.ingress.ssh.IssuedGrant;
import dev.previewtunnel.ingress.ssh.RemotePort;
import dev.previewtunnel.ingress.ssh.RemoteSetup;
import dev.previewtunnel.ingress.ssh.SshLink;
import dev.previewtunnel.ingress.ssh.SshLinkException;
import dev.previewtunnel.ingress.ssh.SshOptions;
import dev.previewtunnel.spikes.lab.Processes;
import dev.previewtunnel.spikes.lab.Sshd;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link SshLink} against the lab's real sshd on loopback (issue 19, items 1-3): the remote side is this machine
 * with fresh XDG cache/state/runtime directories (sshd SetEnv), so nothing touches the real home. The gateway is
 * the real env-gateway jar, uploaded by the link.
 */
class SshLinkTest {
    private static final Duration UP = Duration.ofSeconds(120);
    @TempDir
    static Path lab;
    private static SshLab remote;
    private static Sshd sshd;
    private static Path remoteCache;

    @BeforeAll
    static void startSshd() throws IOException {
        remote = SshLab.start(lab);
        sshd = remote.sshd();
        remoteCache = remote.remoteCache();
    }

    @AfterAll
    static void stopSshd() {
        if (remote != null) {
            remote.close();
        }
    }

    @Test
    @Timeout(300)
    void theFirstLinkUploadsTheJarAndTheSecondFindsItCached() throws Exception {
        Path cached = remoteCache.resolve("preview-tunnel/t-upload/env-gateway.jar");
        assertFalse(Files.exists(cached), "a fresh remote cache");
        Events events = new Events();
        try (SshLink link = start("t-upload", null, "first", events)) {
            link.firstUp().get(UP.toSeconds(), TimeUnit.SECONDS);
            assertEquals("up", events.next());
            assertControlWorks(link.control());
            assertGatewayAnswersAt(link.gatewayUri());
            assertEquals(-1, Files.mismatch(cached, GatewayJar.locate(null)), "the uploaded jar is the local one");
            assertEquals("rw-------", permissions(cached));
            closeAndAssertNothingLeft(link);
        }
        Object uploaded = Files.readAttributes(cached, "unix:ino").get("ino");
        Instant modified = Files.getLastModifiedTime(cached).toInstant();
        try (SshLink link = start("t-upload", null, "second", new Events())) {
            link.firstUp().get(UP.toSeconds(), TimeUnit.SECONDS);
            assertControlWorks(link.control());
            closeAndAssertNothingLeft(link);
        }
        assertEquals(uploaded, Files.readAttributes(cached, "unix:ino").get("ino"), "not uploaded again (hash hit)");
        assertEquals(modified, Files.getLastModifiedTime(cached).toInstant());
    }

    @Test
    @Timeout(120)
    void aRemoteWithoutJavaFailsTheFirstAttemptWithOneLine() throws Exception {
        try (SshLink link = start("t-nojava", "/nonexistent", "nojava", new Events())) {
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> link.firstUp().get(UP.toSeconds(), TimeUnit.SECONDS));
            SshLinkException cause = assertInstanceOf(SshLinkException.class, e.getCause());
            assertEquals("127.0.0.1:" + sshd.port()
                            + " has no Java 17 or newer (found nothing runnable at /nonexistent)"
                            + ": install a JRE 17+ there, or pass --remote-java PATH or --remote-gateway COMMAND",
                    cause.getMessage().replace(sshd.user() + "@", ""));
            assertEquals(SshLink.State.CLOSED, link.status().state());
            assertTrue(Processes.within(Duration.ofSeconds(10), () -> SshLab.sshChildren().isEmpty()),
                    () -> "no ssh child left: " + SshLab.sshChildren());
            assertTrue(link.control().ports().isCompletedExceptionally(), "calls fail at once when the link is down");
        }
    }

    @Test
    @Timeout(120)
    void aRefusedKeyFailsTheFirstAttemptWithSshsOwnWords() throws Exception {
        Path notAuthorized = lab.resolve("sshd/host_ed25519"); // a key sshd does not accept for the user
        SshOptions ssh = new SshOptions(sshd.sshClientScript(), notAuthorized, sshd.clientOptions());
        RemoteSetup setup = new RemoteSetup(null, null, GatewayJar.locate(null), "t-refused", "e");
        try (SshLink link = SshLink.start(remote.destination(), ssh, setup, lab.resolve("desktop-refused"),
                new Events())) {
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> link.firstUp().get(UP.toSeconds(), TimeUnit.SECONDS));
            String line = e.getCause().getMessage();
            assertTrue(line.startsWith("ssh to " + sshd.user() + "@127.0.0.1:" + sshd.port() + " failed: ")
                    && line.contains("Permission denied"), line);
            assertFalse(line.contains("\n"), "one line");
            assertEquals(SshLink.State.CLOSED, link.status().state());
            assertEquals(line, link.status().lastError());
        }
    }

    @Test
    @Timeout(300)
    void aGivenRemoteGatewayCommandIsRunWithoutUploading() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String command = "'" + java + "' -jar '" + GatewayJar.locate(null) + "'";
        RemoteSetup setup = new RemoteSetup(null, command, null, "t-given", "e");
        try (SshLink link = SshLink.start(remote.destination(), remote.options(), setup,
                lab.resolve("desktop-given"), new Events())) {
            link.firstUp().get(UP.toSeconds(), TimeUnit.SECONDS);
            assertControlWorks(link.control());
            closeAndAssertNothingLeft(link);
        }
        assertFalse(Files.exists(remoteCache.resolve("preview-tunnel/t-given")), "nothing uploaded");
    }

    @Test
    @Timeout(300)
    void aFrozenGatewayIsDetectedByPingAndReplaced() throws Exception {
        Events events = new Events();
        try (SshLink link = start("t-frozen", null, "frozen", events)) {
            long frozen = upWithOneGateway(link, events);
            String firstSocket = link.remoteSocket();
            signal("STOP", frozen); // alive, connected, silent: only the ping notices
            try {
                String down = events.next();
                assertEquals("down: the gateway did not answer a ping for 15 s", down);
                assertEquals("up", events.next());
                assertControlWorks(link.control());
            } finally {
                signal("CONT", frozen);
            }
            assertTrue(Processes.within(Duration.ofSeconds(30), () -> SshLab.remoteGatewaysAt(firstSocket).isEmpty()),
                    "the frozen gateway exits once it runs again: its ssh channel was closed");
            closeAndAssertNothingLeft(link);
        }
    }

    /**
     * A network cut: the session's sshd processes stopped, so nothing on the connection answers and nothing closes it
     * (sshd would notice only by TCP keepalive, hours later). The client's alive-checks end the master, the next
     * attempt's bootstrap stops the cut-off gateway, and it is gone while the cut lasts.
     */
    @Test
    @Timeout(300)
    void aCutConnectionsGatewayIsStoppedByTheNextAttempt() throws Exception {
        Events events = new Events();
        try (SshLink link = start("t-cut", null, "cut", events)) {
            long gateway = upWithOneGateway(link, events);
            String firstSocket = link.remoteSocket();
            List<Long> session = new java.util.ArrayList<>();
            for (ProcessHandle p = ProcessHandle.of(gateway).orElseThrow().parent().orElseThrow();
                 p.pid() != sshd.process().pid(); p = p.parent().orElseThrow()) {
                session.add(p.pid()); // the connection's sshd processes, up to the listener
            }
            assertFalse(session.isEmpty());
            session.forEach(pid -> signal("STOP", pid));
            try {
                assertTrue(events.next().startsWith("down: "));
                assertEquals("up", events.next());
                assertTrue(Processes.within(Duration.ofSeconds(30),
                                () -> SshLab.remoteGatewaysAt(firstSocket).isEmpty()),
                        "the cut-off gateway was stopped by the next attempt, the cut still lasting");
                assertControlWorks(link.control());
            } finally {
                session.forEach(pid -> signal("CONT", pid));
            }
            closeAndAssertNothingLeft(link);
        }
    }

    /** Waits for the link to come up and returns the pid of the one remote gateway serving its socket. */
    private static long upWithOneGateway(SshLink link, Events events) throws Exception {
        link.firstUp().get(UP.toSeconds(), TimeUnit.SECONDS);
        assertEquals("up", events.next());
        List<Long> gateway = SshLab.remoteGatewaysAt(link.remoteSocket());
        assertEquals(1, gateway.size(), gateway::toString);
        return gateway.get(0);
    }

    /**
     * The desktop killed with SIGKILL, so nothing of ours runs to close anything: the pipes to its ssh children close
     * with it, the gateway's stdin ends (it exits, removing its socket) and so does the master's session (it exits);
     * nothing is left on either side.
     */
    @Test
    @Timeout(300)
    void aKilledDesktopLeavesNoMasterAndNoGateway() throws Exception {
        List<String> cmd = new java.util.ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                        .toString(), "-cp", System.getProperty("java.class.path"), SshLinkChild.class.getName(),
                sshd.sshClientScript().toString(), sshd.userKey().toString(), sshd.user(),
                String.valueOf(sshd.port()), lab.resolve("desktop-killed").toString(), "t-killed"));
        cmd.addAll(sshd.clientOptions());
        Process desktop = new ProcessBuilder(cmd).redirectError(lab.resolve("desktop-killed.err").toFile()).start();
        try (java.io.BufferedReader out = new java.io.BufferedReader(
                new java.io.InputStreamReader(desktop.getInputStream(), StandardCharsets.UTF_8))) {
            String socket = null;
            for (String line; socket == null && (line = out.readLine()) != null; ) {
                socket = line.startsWith("up ") ? line.substring(3) : null;
            }
            assertNotNull(socket,
                    () -> "the child came up: " + Processes.tail(lab.resolve("desktop-killed.err"), 2000));
            List<ProcessHandle> masters = desktop.descendants().filter(p -> p.info().arguments()
                    .map(a -> List.of(a).contains("-M")).orElse(false)).toList();
            assertEquals(1, masters.size(), masters::toString);
            String gatewaySocket = socket;
            assertEquals(1, SshLab.remoteGatewaysAt(gatewaySocket).size());

            desktop.destroyForcibly(); // SIGKILL
            assertTrue(Processes.within(Duration.ofSeconds(30), () -> !masters.get(0).isAlive()
                            && SshLab.remoteGatewaysAt(gatewaySocket).isEmpty()),
                    () -> "master alive: " + masters.get(0).isAlive() + ", gateways: "
                            + SshLab.remoteGatewaysAt(gatewaySocket));
            assertTrue(Processes.within(Duration.ofSeconds(10), () -> !Files.exists(Path.of(gatewaySocket))));
        } finally {
            desktop.destroyForcibly();
            desktop.descendants().forEach(ProcessHandle::destroyForcibly);
        }
    }

    private static void signal(String name, long pid) {
        Processes.runOk(List.of("kill", "-" + name, String.valueOf(pid)), null, Duration.ofSeconds(10));
    }

    @Test
    @Timeout(300)
    void aKilledMasterIsReconnectedBehindTheSameUri() throws Exception {
        Events events = new Events();
        try (SshLink link = start("t-kill", null, "kill", events)) {
            link.firstUp().get(UP.toSeconds(), TimeUnit.SECONDS);
            assertEquals("up", events.next());
            URI uri = link.gatewayUri();
            String firstSocket = link.remoteSocket();
            ProcessHandle master = SshLab.sshChildren().stream()
                    .filter(p -> p.info().arguments().map(a -> List.of(a).contains("-M")).orElse(false))
                    .findFirst().orElseThrow(() -> new AssertionError("no master among " + SshLab.sshChildren()));
            master.destroyForcibly(); // SIGKILL: no goodbye to sshd, a stale control socket left behind

            String down = events.next();
            assertTrue(down.startsWith("down: the ssh connection ended"), down);
            assertEquals("up", events.next());
            assertEquals(SshLink.State.UP, link.status().state());
            assertEquals(2, link.status().attempt());
            assertEquals(uri, link.gatewayUri(), "the same URI for the link's whole life");
            assertControlWorks(link.control());
            assertGatewayAnswersAt(uri);
            assertNotEquals(firstSocket, link.remoteSocket());
            assertTrue(Processes.within(Duration.ofSeconds(30), () -> SshLab.remoteGatewaysAt(firstSocket).isEmpty()),
                    "the first gateway exited when its ssh channel died");
            closeAndAssertNothingLeft(link);
        }
    }

    private static SshLink start(String version, String remoteJava, String stateName, Events events) {
        return remote.link(version, remoteJava, lab.resolve("desktop-" + stateName), events);
    }

    private static void assertControlWorks(GatewayControl control) throws Exception {
        String token = control.token(Duration.ofHours(1)).get(30, TimeUnit.SECONDS);
        assertEquals(3, token.split("\\.").length, "a JWT");
        IssuedGrant grant = control.grant("s1", "localhost:5173", Duration.ofMinutes(5)).get(30, TimeUnit.SECONDS);
        assertEquals(3, grant.jwt().split("\\.").length, "a JWT");
        assertNotNull(grant.grantId());
        assertTrue(grant.expiresAt().isAfter(Instant.now()), grant::toString);
        assertFalse(grant.toString().contains(grant.jwt()), "toString leaves the JWT out");
        assertNoSecretInAnyCommandLineOrLog(token, grant.jwt());
        try (java.net.ServerSocket listener = new java.net.ServerSocket(0, 1,
                java.net.InetAddress.getByName("127.0.0.1"))) {
            List<RemotePort> ports = control.ports().get(30, TimeUnit.SECONDS);
            assertTrue(ports.stream().anyMatch(p -> p.port() == listener.getLocalPort()
                    && "127.0.0.1".equals(p.address())), () -> "a listener of the ssh user is listed: " + ports);
        }
    }

    /** Tokens and grants travel on the control channel only: no process's command line and no log here has them. */
    private static void assertNoSecretInAnyCommandLineOrLog(String... secrets) throws IOException {
        List<Long> holders = ProcessHandle.allProcesses().filter(p -> {
            try {
                String cmdline = Files.readString(Path.of("/proc", String.valueOf(p.pid()), "cmdline"),
                        StandardCharsets.ISO_8859_1);
                return java.util.Arrays.stream(secrets).anyMatch(cmdline::contains);
            } catch (IOException | java.io.UncheckedIOException e) {
                return false;
            }
        }).map(ProcessHandle::pid).toList();
        assertEquals(List.of(), holders, "processes with a token or grant on their command line");
        try (Stream<Path> files = Files.walk(lab)) {
            for (Path f : files.filter(f -> f.toString().endsWith(".log")).toList()) {
                String text = Files.readString(f, StandardCharsets.ISO_8859_1);
                for (String secret : secrets) {
                    assertFalse(text.contains(secret), "a secret in " + f);
                }
            }
        }
    }

    /** An HTTP request to the forward gets the gateway's own HTTP answer (no token: refused, but by the gateway). */
    private static void assertGatewayAnswersAt(URI uri) throws IOException {
        try (Socket s = new Socket(uri.getHost(), uri.getPort())) {
            s.setSoTimeout(20_000);
            OutputStream out = s.getOutputStream();
            out.write(("GET " + uri.getPath() + " HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            String head = new String(in.readNBytes(12), StandardCharsets.US_ASCII);
            assertTrue(head.startsWith("HTTP/1.1 "), "the gateway answered through the forward: " + head);
        }
    }

    private static void closeAndAssertNothingLeft(SshLink link) throws IOException {
        String socket = link.remoteSocket();
        assertNotNull(socket);
        assertFalse(SshLab.remoteGatewaysAt(socket).isEmpty(), "the remote gateway runs while the link is up");
        link.close();
        link.close(); // idempotent
        assertEquals(SshLink.State.CLOSED, link.status().state());
        assertTrue(Processes.within(Duration.ofSeconds(10), () -> SshLab.sshChildren().isEmpty()),
                () -> "no ssh child left: " + SshLab.sshChildren());
        assertTrue(Processes.within(Duration.ofSeconds(20), () -> SshLab.remoteGatewaysAt(socket).isEmpty()),
                () -> "no remote gateway left: " + SshLab.remoteGatewaysAt(socket));
        assertFalse(Files.exists(Path.of(socket)), "the gateway's socket is gone");
        assertTrue(link.control().token(Duration.ofMinutes(1)).isCompletedExceptionally(),
                "closed: calls fail at once");
        try (Stream<Path> files = Files.list(lab)) {
            files.filter(d -> d.getFileName().toString().startsWith("desktop-")).forEach(d -> {
                try (Stream<Path> sockets = Files.list(d.resolve("ssh"))) {
                    assertEquals(List.of(), sockets.toList(), "the control socket is gone");
                } catch (IOException e) {
                    throw new AssertionError(e);
                }
            });
        }
    }

    private static String permissions(Path file) throws IOException {
        return java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(file));
    }

    /** What the link told its listener, in order. */
    private static final class Events implements SshLink.Listener {
        private final BlockingQueue<String> queue = new LinkedBlockingQueue<>();

        @Override
        public void up(GatewayControl control) {
            queue.add("up");
        }

        @Override
        public void down(String why) {
            queue.add("down: " + why);
        }

        String next() throws InterruptedException {
            String e = queue.poll(UP.toSeconds(), TimeUnit.SECONDS);
            assertNotNull(e, "the link told its listener something in time");
            return e;
        }
    }
}
