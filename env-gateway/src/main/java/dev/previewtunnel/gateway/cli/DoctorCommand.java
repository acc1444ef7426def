package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.ListenAddress;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.gateway.policy.Cidr;
import dev.previewtunnel.gateway.policy.PolicyException;
import dev.previewtunnel.gateway.policy.TargetPolicy;
import dev.previewtunnel.grants.GrantException;
import dev.previewtunnel.grants.GrantVerifier;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.grants.VerificationKeys;
import dev.previewtunnel.grants.VerifiedGrant;
import dev.previewtunnel.grants.VerifiedToken;
import dev.previewtunnel.grants.VerifierPolicy;
import dev.previewtunnel.mux.Authority;
import dev.previewtunnel.mux.MuxProtocol;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.BindException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * {@code doctor}: checks what usually goes wrong on the gateway side and says what to do next. Observes only: it
 * reads files and opens test connections; it never writes, starts or stops anything (to see whether the listen
 * address can be bound it binds it for an instant and releases it).
 */
@Command(name = "doctor",
        mixinStandardHelpOptions = true,
        versionProvider = GatewayVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footer = GatewayMain.FOOTER,
        sortOptions = false,
        description = {
                "Check the gateway's setup and say what to fix: the key directory, the signing key's permissions, "
                        + "the verify keys, the clock, the listen address, TLS files, and (optionally) a target, "
                        + "a connection token and grants.",
                "Reads the same settings as 'serve' (flags, PTUN_GATEWAY_* variables, --config file). Prints one "
                        + "line per check: ok, warn, fail or skip, the check's name and what to do next; --json "
                        + "prints one JSON object per check instead.",
                "Only observes: never writes a file, starts or stops anything. Exits 0 when nothing failed, "
                        + "else with the first failure's code (2 unreachable, 3 refused, 1 missing setting)."})
final class DoctorCommand implements Callable<Integer> {
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(2);

    @Spec
    CommandSpec spec;

    @Option(names = "--config", paramLabel = "FILE", description = "The JSON config file 'serve' uses.")
    Path config;

    @Option(names = "--keys", paramLabel = "DIR", description = "Key directory or verify-keys.jwks.json, as for serve.")
    Path keys;

    @Option(names = "--env", paramLabel = "ENV", description = "The environment serve serves.")
    String environment;

    @Option(names = "--listen", paramLabel = "HOST:PORT", description = "The address serve listens on.")
    String listen;

    @Option(names = "--target", paramLabel = "HOST:PORT",
            description = "A target grants name (a dev server, e.g. localhost:5173): check the target policy "
                    + "allows it and that something accepts connections there. Repeatable.")
    List<String> targets = new ArrayList<>();

    @Option(names = "--token-file", paramLabel = "FILE",
            description = "A connection token ('token issue'): check it verifies for ENV with these keys.")
    Path tokenFile;

    @Option(names = "--grant-file", paramLabel = "FILE",
            description = "A file of grants, one per line: check each verifies for ENV and its target.")
    Path grantFile;

    @Option(names = "--json", description = "One JSON object per check instead of text lines.")
    boolean json;

    /** The clock compared against; replaced by tests. */
    Clock clock = Clock.systemUTC();

    private DoctorReport report;

    @Override
    public Integer call() {
        report = new DoctorReport(spec.commandLine().getOut(), json);
        Settings s = report.loadSettings(spec, config, GatewayCli.ENV_PREFIX, ServeCommand.CONFIG_KEYS);
        if (s == null) {
            report.summary("env-gateway");
            return report.exitCode();
        }
        String env = report.setting(() -> s.string("env", environment, null));
        Path keysPath = report.setting(() -> s.path("keys", keys, null));
        String listenText = report.setting(() -> s.string("listen", listen, null));
        String path = report.setting(() -> s.string("path", null, MuxProtocol.DEFAULT_PATH));
        Path cert = report.setting(() -> s.path("tls-cert", null, null));
        Path key = report.setting(() -> s.path("tls-key", null, null));
        List<Cidr> allowed = report.setting(() -> s.list("allow-target", null, CidrConverter::parse));

        VerificationKeys verifyKeys = checkKeys(keysPath);
        checkClock(keysPath);
        if (env == null) {
            report.fail("env", ExitCodes.USAGE, "no environment set: give --env ENV (or PTUN_GATEWAY_ENV, or \"env\" "
                    + "in the config file); tokens and grants must name it");
        } else {
            report.ok("env", "serves environment '" + Cli.shown(env) + "'");
        }
        checkListen(listenText, path == null ? MuxProtocol.DEFAULT_PATH : path, cert != null);
        checkTls(cert, key);
        checkTargets(allowed == null ? List.of() : allowed);
        if (verifyKeys != null && env != null) {
            GrantVerifier verifier = new GrantVerifier(verifyKeys, clock, VerifierPolicy.defaults());
            checkToken(verifier, env);
            checkGrants(verifier, env);
        } else if (tokenFile != null || grantFile != null) {
            report.skip("token", "cannot check tokens or grants without valid verify keys and an environment");
        }
        report.summary("env-gateway");
        return report.exitCode();
    }

    /** A setting whose value is invalid is a failed "config" check, not an abort: the other checks still run. */
    // ---- keys

    private VerificationKeys checkKeys(Path keysPath) {
        if (keysPath == null) {
            report.fail("keys-dir", ExitCodes.USAGE, "no key directory set: give --keys DIR (or PTUN_GATEWAY_KEYS); "
                    + "create one with: env-gateway keys init --dir DIR");
            return null;
        }
        Path dir;
        Path verifyFile;
        if (Files.isRegularFile(keysPath)) {
            dir = null;
            verifyFile = keysPath;
            report.ok("keys-dir", "keys given as the verify-keys file " + keysPath + " (no signing key needed here)");
        } else if (!Files.isDirectory(keysPath)) {
            report.fail("keys-dir", ExitCodes.REFUSED, "key directory " + keysPath + " does not exist: create it with "
                    + "'env-gateway keys init --dir " + keysPath + "' (or copy verify-keys.jwks.json there from "
                    + "where grants are issued)");
            return null;
        } else {
            dir = keysPath;
            verifyFile = dir.resolve(KeyDirectory.VERIFY_KEYS_FILE);
            String perms = perms(dir);
            if (shared(dir)) {
                report.warn("keys-dir", "key directory " + dir + " is accessible by group/others (" + perms
                        + "): chmod 700 " + dir);
            } else {
                report.ok("keys-dir", dir + " exists" + (perms.isEmpty() ? "" : " (" + perms + ")"));
            }
        }
        if (dir != null) {
            checkSigningKey(dir);
        }
        try {
            VerificationKeys loaded = VerificationKeys.load(verifyFile);
            report.ok("verify-keys", verifyFile.getFileName() + " parses: " + loaded.kids().size() + " key(s), kid "
                    + String.join(", ", loaded.kids()));
            return loaded;
        } catch (NoSuchFileException e) {
            report.fail("verify-keys", ExitCodes.REFUSED, "no " + KeyDirectory.VERIFY_KEYS_FILE + " in " + keysPath
                    + ": run 'env-gateway keys init --dir " + keysPath + "' or copy the file from where grants are "
                    + "issued");
        } catch (AccessDeniedException e) {
            report.fail("verify-keys", ExitCodes.REFUSED, verifyFile + " is not readable by this user (permission "
                    + "denied): run doctor and serve as the user that owns the keys");
        } catch (IOException | RuntimeException e) {
            report.fail("verify-keys", ExitCodes.REFUSED, verifyFile + " does not parse as a JWK Set of Ed25519 "
                    + "public keys (" + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": "
                    + e.getMessage()) + "): restore it from the key directory where grants are issued");
        }
        return null;
    }

    private void checkSigningKey(Path dir) {
        Path signing = dir.resolve(KeyDirectory.SIGNING_KEY_FILE);
        if (!Files.exists(signing)) {
            report.ok("signing-key", "no signing key in " + dir + " (fine: serve only needs the public keys; "
                    + "grants are issued where the signing key is)");
            return;
        }
        if (shared(signing)) {
            report.fail("signing-key", ExitCodes.REFUSED, "signing key " + signing + " is readable by group/others ("
                    + perms(signing) + "): anyone who can read it can mint grants; chmod 600 " + signing
                    + ", and rotate it (env-gateway keys rotate --dir " + dir + ") if others may have copied it");
            return;
        }
        try {
            KeyDirectory.open(dir);
            report.ok("signing-key", signing.getFileName() + " is owner-only (" + perms(signing)
                    + ") and its kid is among the verify keys");
        } catch (AccessDeniedException e) {
            report.fail("signing-key", ExitCodes.REFUSED, signing + " is not readable by this user (permission "
                    + "denied)");
        } catch (IOException | RuntimeException e) {
            report.fail("signing-key", ExitCodes.REFUSED, "the key directory " + dir + " is inconsistent: "
                    + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
        }
    }

    // ---- clock

    private void checkClock(Path keysPath) {
        Instant now = clock.instant();
        if (keysPath != null) {
            Path verifyFile = Files.isDirectory(keysPath) ? keysPath.resolve(KeyDirectory.VERIFY_KEYS_FILE) : keysPath;
            try {
                Instant modified = Files.getLastModifiedTime(verifyFile).toInstant();
                if (modified.isAfter(now.plus(Duration.ofMinutes(1)))) {
                    report.fail("clock", ExitCodes.REFUSED, "this host's clock (" + now.truncatedTo(ChronoUnit.SECONDS)
                            + ") is behind the time " + verifyFile.getFileName() + " was written (" + modified
                            .truncatedTo(ChronoUnit.SECONDS) + "): the clock jumped back; fix it (timedatectl "
                            + "set-ntp true), or every grant looks not-yet-valid");
                    return;
                }
            } catch (IOException e) {
                // reported by the keys checks
            }
        }
        report.ok("clock", "local time " + now.truncatedTo(ChronoUnit.SECONDS) + "; grants are checked with "
                + VerifierPolicy.defaults().clockSkew().toSeconds() + " s of allowance, so keep this host and the "
                + "issuing host on NTP ('desktop-ingress doctor' measures the skew from the desktop)");
    }

    // ---- listen

    private void checkListen(String text, String path, boolean tls) {
        if (text == null) {
            report.fail("listen", ExitCodes.USAGE, "no listen address set: give --listen HOST:PORT, e.g. "
                    + "127.0.0.1:7443 (or PTUN_GATEWAY_LISTEN)");
            return;
        }
        InetSocketAddress address;
        try {
            address = ListenAddress.parse(text).resolve();
        } catch (IllegalArgumentException e) {
            report.fail("listen", ExitCodes.USAGE, "listen address '" + Cli.shown(text) + "' is not HOST:PORT ("
                    + e.getMessage() + ")");
            return;
        } catch (IOException e) {
            report.fail("listen", ExitCodes.UNREACHABLE, "listen host of '" + Cli.shown(text) + "' does not resolve");
            return;
        }
        String shown = Cli.hostPort(address);
        String exposure = address.getAddress().isLoopbackAddress() ? ""
                : tls ? " (not loopback: reachable from other hosts, over TLS)"
                : " (not loopback and without TLS: tokens and grants would cross the network in clear text)";
        if (address.getPort() == 0) {
            report.ok("listen", shown + ": port 0, serve picks a free port and prints it" + exposure);
            return;
        }
        String occupant = probe(address, path, tls);
        if (occupant == null) {
            try (ServerSocket probe = new ServerSocket()) {
                probe.setReuseAddress(true);
                probe.bind(address);
            } catch (BindException e) {
                report.fail("listen", ExitCodes.UNREACHABLE, "cannot bind " + shown + " (" + e.getMessage()
                        + "): use an address of this host, and a port above 1023 unless serve runs with the "
                        + "privilege for it");
                return;
            } catch (IOException e) {
                report.fail("listen", ExitCodes.UNREACHABLE, "cannot bind " + shown + " (" + e.getClass().getSimpleName()
                        + ")");
                return;
            }
            if (exposure.contains("clear text")) {
                report.warn("listen", shown + " is free" + exposure + ": listen on 127.0.0.1 and use ssh -L, or "
                        + "add --tls-cert/--tls-key");
            } else {
                report.ok("listen", shown + " is free: serve can bind it" + exposure);
            }
        } else if (occupant.equals("gateway")) {
            report.ok("listen", "a preview-tunnel gateway is already listening on " + shown + " (serve is running)");
        } else {
            report.fail("listen", ExitCodes.UNREACHABLE, shown + " is in use by another program (" + occupant + "): "
                    + "pick another --listen port, or find it with: ss -ltnp 'sport = :" + address.getPort() + "'");
        }
    }

    /** Null when nothing accepts on the address, "gateway" for a gateway, else a description of what answered. */
    private static String probe(InetSocketAddress address, String path, boolean tls) {
        try (Socket socket = new Socket()) {
            socket.connect(address, (int) CONNECT_TIMEOUT.toMillis());
            if (tls) {
                return "something accepts TCP there; with TLS configured it is not probed further";
            }
            socket.setSoTimeout((int) CONNECT_TIMEOUT.toMillis());
            OutputStream out = socket.getOutputStream();
            out.write(("GET " + path + " HTTP/1.1\r\nHost: " + Cli.hostPort(address) + "\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            byte[] head = in.readNBytes(2048);
            String answer = new String(head, StandardCharsets.ISO_8859_1);
            if (answer.startsWith("HTTP/1.1 426") && answer.contains("websocket_required")) {
                return "gateway";
            }
            if (answer.startsWith("HTTP/")) {
                int eol = answer.indexOf('\r');
                return "it answered " + Cli.shown(eol > 0 ? answer.substring(0, eol) : answer);
            }
            return answer.isEmpty() ? "it accepted and closed the connection" : "it does not speak HTTP";
        } catch (ConnectException e) {
            return null;
        } catch (SocketTimeoutException e) {
            return "it accepted but did not answer an HTTP request";
        } catch (IOException e) {
            return null;
        }
    }

    // ---- TLS

    private void checkTls(Path cert, Path key) {
        if (cert == null && key == null) {
            return;
        }
        if (cert == null || key == null) {
            report.fail("tls", ExitCodes.USAGE, "tls-cert and tls-key must be given together");
            return;
        }
        if (!Files.isReadable(key)) {
            report.fail("tls", ExitCodes.REFUSED, "TLS key " + key + " does not exist or is not readable");
            return;
        }
        try (InputStream in = Files.newInputStream(cert)) {
            X509Certificate x509 = (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
            Instant notAfter = x509.getNotAfter().toInstant();
            Instant now = clock.instant();
            if (notAfter.isBefore(now)) {
                report.fail("tls", ExitCodes.REFUSED, "TLS certificate " + cert + " expired at " + notAfter
                        + ": renew it");
            } else if (shared(key)) {
                report.warn("tls", "TLS key " + key + " is readable by group/others (" + perms(key) + "): chmod 600 "
                        + key);
            } else if (notAfter.isBefore(now.plus(Duration.ofDays(14)))) {
                report.warn("tls", "TLS certificate " + cert + " expires soon, at " + notAfter + ": renew it");
            } else {
                report.ok("tls", "certificate " + cert.getFileName() + " valid until " + notAfter + "; key is owner-only");
            }
        } catch (IOException | CertificateException | ClassCastException e) {
            report.fail("tls", ExitCodes.REFUSED, "cannot read the TLS certificate " + cert + " ("
                    + e.getClass().getSimpleName() + "): it must be a PEM certificate chain");
        }
    }

    // ---- targets

    private void checkTargets(List<Cidr> allowed) {
        if (targets.isEmpty()) {
            report.skip("target", "no --target given: add e.g. --target localhost:5173 to check a dev server");
            return;
        }
        TargetPolicy policy = allowed.isEmpty() ? TargetPolicy.loopbackOnly() : TargetPolicy.loopbackPlus(allowed);
        for (String text : targets) {
            Authority target;
            try {
                target = Authority.parse(text);
            } catch (IllegalArgumentException e) {
                report.fail("target", ExitCodes.USAGE, "target '" + Cli.shown(text) + "' is not HOST:PORT");
                continue;
            }
            List<InetAddress> addresses;
            try {
                addresses = policy.resolve(target.host());
            } catch (PolicyException e) {
                report.fail("target", ExitCodes.REFUSED, target + " is refused by the target policy (" + e.code()
                        + "): grants for it would fail with policy_refused; only loopback targets are allowed "
                        + "unless serve has --allow-target for their network");
                continue;
            }
            String failure = null;
            for (InetAddress a : addresses) {
                try (Socket socket = new Socket()) {
                    socket.connect(new InetSocketAddress(a, target.port()), (int) CONNECT_TIMEOUT.toMillis());
                    failure = null;
                    report.ok("target", target + " accepts connections (" + Cli.hostPort(new InetSocketAddress(a,
                            target.port())) + ")");
                    break;
                } catch (SocketTimeoutException e) {
                    failure = "timed out";
                } catch (IOException e) {
                    failure = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
                }
            }
            if (failure != null) {
                report.fail("target", ExitCodes.UNREACHABLE, "nothing listens on " + target + " (" + failure
                        + "): start the dev server there (browsers would get target_refused, 502); a server bound "
                        + "to ::1 only is not reached through 127.0.0.1, and the other way round");
            }
        }
    }

    // ---- token and grants

    private void checkToken(GrantVerifier verifier, String env) {
        if (tokenFile == null) {
            return;
        }
        String token = firstLine(tokenFile, "token");
        if (token == null) {
            return;
        }
        try {
            VerifiedToken verified = verifier.verifyConnectionToken(token, env);
            report.ok("token", "token verifies for '" + Cli.shown(env) + "' with kid " + verified.kid()
                    + ", expires " + verified.expiresAt());
        } catch (GrantException e) {
            report.fail("token", ExitCodes.REFUSED, "the token in " + tokenFile + " does not verify ("
                    + e.failure().code() + "): issue one with 'env-gateway token issue --keys DIR --env "
                    + Cli.shown(env) + "'");
        }
    }

    private void checkGrants(GrantVerifier verifier, String env) {
        if (grantFile == null) {
            return;
        }
        List<String> grants = lines(grantFile, "grant");
        for (int i = 0; i < grants.size(); i++) {
            String where = "line " + (i + 1) + " of " + grantFile;
            UnverifiedGrantView view;
            try {
                view = UnverifiedGrantView.decode(grants.get(i));
            } catch (IllegalArgumentException e) {
                report.fail("grant", ExitCodes.USAGE, where + " is not a grant");
                continue;
            }
            String authority = new Authority(view.targetHost(), view.targetPort()).toString();
            try {
                VerifiedGrant verified = verifier.verifyGrant(grants.get(i), env, authority);
                report.ok("grant", where + ": grant " + verified.jti() + " for " + authority + " verifies, expires "
                        + verified.expiresAt());
            } catch (GrantException e) {
                report.fail("grant", ExitCodes.REFUSED, where + ": grant for " + authority + " does not verify ("
                        + e.failure().code() + "): issue a new one with 'env-gateway grant issue'");
            }
        }
    }

    private String firstLine(Path file, String what) {
        List<String> lines = lines(file, what);
        return lines.isEmpty() ? null : lines.get(0);
    }

    private List<String> lines(Path file, String what) {
        try {
            return Files.readString(file).lines().map(String::strip)
                    .filter(l -> !l.isEmpty() && !l.startsWith("#")).toList();
        } catch (IOException e) {
            report.fail(what, ExitCodes.REFUSED, "cannot read " + file + " (" + e.getClass().getSimpleName() + ")");
            return List.of();
        }
    }

    // ---- files

    private static boolean shared(Path p) {
        try {
            if (!p.getFileSystem().supportedFileAttributeViews().contains("posix")) {
                return false;
            }
            Set<PosixFilePermission> perms = Files.getPosixFilePermissions(p);
            return perms.stream().anyMatch(x -> !x.name().startsWith("OWNER_"));
        } catch (IOException e) {
            return false;
        }
    }

    private static String perms(Path p) {
        try {
            return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
        } catch (IOException | UnsupportedOperationException e) {
            return "";
        }
    }
}
