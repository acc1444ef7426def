package dev.previewtunnel.ingress.ssh;

import dev.previewtunnel.mux.local.JvmDefaults;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

/**
 * Makes the remote able to run the gateway (issue 19, item 2): inspects it with bootstrap.sh (one ssh command),
 * then uses {@code env-gateway} from its PATH (or {@code --remote-gateway}), else the jar cached under
 * {@code ~/.cache/preview-tunnel/VERSION/} run by a Java 17+, uploading the jar first when its SHA-256 differs.
 */
final class RemoteInstall {
    /**
     * The gateway's JVM flags: those of serve (memory defaults included, as the package's
     * launcher runs serve), and the JVM's own warnings (unified logging, stdout by default) on stderr, since stdout
     * is the control channel and a stray line there would break it. The remote's Java may be older than 17.0.9
     * (or 18-20), which lack -XX:TrimNativeHeapInterval: IgnoreUnrecognizedVMOptions keeps the gateway starting
     * there (the JVM scans for it before the other options); nobody else's options reach this line.
     */
    static final List<String> REMOTE_JVM_FLAGS = java.util.stream.Stream.concat(
            JvmDefaults.GATEWAY_FLAGS.stream(),
            java.util.stream.Stream.of("-XX:+IgnoreUnrecognizedVMOptions", "-Xlog:disable",
                    "-Xlog:all=warning:stderr")).toList();

    private static final Logger log = LoggerFactory.getLogger(RemoteInstall.class);
    private static final Duration INSPECT = Duration.ofSeconds(60);
    private static final Duration UPLOAD = Duration.ofMinutes(5);

    /** The remote's facts and the command (a shell word list) that runs the gateway there. */
    record Installed(RemoteFacts facts, String launcher) {
    }

    private RemoteInstall() {
    }

    static Installed install(LinkPlan plan, AttemptProcesses procs) {
        RemoteFacts facts = inspect(plan, procs);
        String host = plan.dest().shown();
        if (!facts.gateway().isEmpty()) {
            // --remote-gateway is a command line the user wrote for that shell; a PATH lookup is one path
            String launcher = plan.setup().remoteGateway() != null ? plan.setup().remoteGateway()
                    : RemoteShell.quote(facts.gateway());
            return new Installed(facts, launcher);
        }
        if (facts.javaMajor() < 17) {
            String found = facts.java().isEmpty() ? "no java on its PATH"
                    : facts.javaMajor() == 0 ? "nothing runnable at " + facts.java()
                    : "Java " + facts.javaMajor() + " at " + facts.java();
            throw new SshLinkException(host + " has no Java 17 or newer (found " + found + "): install a JRE 17+ "
                    + "there, or pass --remote-java PATH or --remote-gateway COMMAND");
        }
        if (plan.setup().gatewayJar() == null) {
            throw new SshLinkException(host + " has no env-gateway on its PATH and there is no gateway jar to upload");
        }
        if (!plan.jarSha256().equals(facts.jarSha256())) {
            upload(plan, procs, facts);
        } else {
            log.info("ssh: the gateway jar on {} is current", host);
        }
        return new Installed(facts, RemoteShell.quote(facts.java()) + " " + String.join(" ", REMOTE_JVM_FLAGS)
                + " -jar " + RemoteShell.quote(facts.jarPath()));
    }

    private static RemoteFacts inspect(LinkPlan plan, AttemptProcesses procs) {
        RemoteSetup setup = plan.setup();
        String script = "PT_VERSION=" + RemoteShell.quote(setup.version()) + "\n"
                + "PT_JAVA=" + RemoteShell.quote(setup.remoteJava() == null ? "" : setup.remoteJava()) + "\n"
                + "PT_GATEWAY=" + RemoteShell.quote(setup.remoteGateway() == null ? "" : setup.remoteGateway()) + "\n"
                + "PT_LINK=" + RemoteShell.quote(plan.linkId()) + "\n"
                + bootstrapScript();
        AttemptProcesses.Result r = procs.run("bootstrap", plan.commands().remote("sh -s"),
                new ByteArrayInputStream(script.getBytes(StandardCharsets.UTF_8)), INSPECT);
        if (r.exit() != 0) {
            throw new SshLinkException("the setup on " + plan.dest().shown() + " failed"
                    + (r.exit() < 0 ? " (no answer within " + INSPECT.toSeconds() + " s)" : "")
                    + (r.errorLines().isEmpty() ? "" : ": " + r.errorLines()));
        }
        return RemoteFacts.parse(plan.dest().shown(), r.stdout());
    }

    /** Bytes to a temporary name, renamed into place, then hashed remotely: a cut-off copy is never run. */
    private static void upload(LinkPlan plan, AttemptProcesses procs, RemoteFacts facts) {
        String host = plan.dest().shown();
        if (facts.hashTool().isEmpty()) {
            throw new SshLinkException(host + " has none of sha256sum, shasum or openssl to check the uploaded "
                    + "gateway jar: install one, or env-gateway itself (then it is used from the PATH)");
        }
        log.info("ssh: uploading the gateway jar to {}", host);
        String tmp = facts.cache() + "/.upload." + UUID.randomUUID().toString().substring(0, 8);
        String script = "umask 077; mkdir -p " + RemoteShell.quote(facts.cache()) + " && cat > "
                + RemoteShell.quote(tmp) + " && mv -f " + RemoteShell.quote(tmp) + " "
                + RemoteShell.quote(facts.jarPath()) + " && " + facts.hashTool() + " "
                + RemoteShell.quote(facts.jarPath()) + " || { rm -f " + RemoteShell.quote(tmp) + "; exit 1; }";
        AttemptProcesses.Result r;
        try (InputStream jar = Files.newInputStream(plan.setup().gatewayJar())) {
            r = procs.run("upload", plan.commands().remote(RemoteShell.sh(script)), jar, UPLOAD);
        } catch (IOException e) {
            throw new SshLinkException("cannot read the gateway jar " + plan.setup().gatewayJar() + ": "
                    + e.getMessage(), e);
        }
        if (r.exit() != 0) {
            throw new SshLinkException("uploading the gateway jar to " + host + " failed"
                    + (r.errorLines().isEmpty() ? "" : ": " + r.errorLines()));
        }
        String remoteHash = r.stdout().strip().split("[ *]", 2)[0];
        if (!plan.jarSha256().equals(remoteHash)) {
            throw new SshLinkException("the gateway jar uploaded to " + host + " has another SHA-256 there ("
                    + remoteHash + ") than here (" + plan.jarSha256() + "): the copy was altered or cut off");
        }
    }

    private static String bootstrapScript() {
        try (InputStream in = RemoteInstall.class.getResourceAsStream("bootstrap.sh")) {
            if (in == null) {
                throw new IllegalStateException("bootstrap.sh missing from the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
