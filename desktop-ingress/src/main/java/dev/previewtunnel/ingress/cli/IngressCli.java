package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.cli.TrustedPaths;
import dev.previewtunnel.ingress.session.StateFiles;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Model.CommandSpec;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/** Ingress-specific command helpers shared by run, doctor and the control commands. */
final class IngressCli {
    private static final Logger log = LoggerFactory.getLogger(IngressCli.class);
    /** Environment variables of the ingress's settings start with this ({@code PTUN_INGRESS_GATEWAY}). */
    static final String ENV_PREFIX = "PTUN_INGRESS_";
    /**
     * Keys of the ingress's JSON config file: the long option names of 'run' without "--" ({@code control} is the
     * opposite of --no-control). Every command that takes --config accepts the same file and reads what it needs.
     * Tokens and grants are never settings: only the files holding them are.
     */
    static final Set<String> CONFIG_KEYS = Settings.keys(Set.of("gateway", "token-file", "grant-file", "listen", "pool",
            "gateway-ca", "state-dir", "session-id", "control", "control-listen", "metrics-listen", "drain-timeout",
            "drain-idle-timeout", "audit-file", "grant-refresh-command", "grant-refresh-arg", "grant-refresh-url", "grant-refresh-token-file",
            "grant-refresh-timeout"), LimitOptions.KEYS, EnvironmentOptions.KEYS);
    /** A token or grant file is a few KiB at most; anything this big is the wrong file. */
    static final long MAX_SECRET_FILE = 1024 * 1024;
    static final String SESSION_ID = "[A-Za-z0-9._-]{1,64}";
    static final String SESSION_ID_RULE = "must be 1 to 64 letters, digits, '.', '_' or '-'";
    static final int MAX_TOKEN_LENGTH = 16 * 1024;

    private IngressCli() {
    }

    /** {@code id} as given for {@code what} (an option or parameter label), or a usage error naming it. */
    static String sessionId(picocli.CommandLine.Model.CommandSpec spec, String what, String id) {
        if (!id.matches(SESSION_ID)) {
            throw Cli.usage(spec, what + " " + SESSION_ID_RULE + ", got '" + Cli.shown(id) + "'");
        }
        return id;
    }

    static Path defaultStateDir() {
        return StateFiles.defaultDirectory();
    }

    /**
     * ws:// or wss://, a host, no user info, query or fragment. The value is never echoed: it may hold a secret.
     *
     * @param option how to name the setting in messages ({@code --gateway}, or its environment/config origin)
     */
    static URI parseGateway(CommandSpec spec, String option, String text) {
        URI uri;
        try {
            uri = new URI(text);
        } catch (URISyntaxException e) {
            throw Cli.usage(spec, option + " is not a valid URL; expected ws://HOST:PORT/PATH or wss://HOST:PORT/PATH");
        }
        if (uri.getRawQuery() != null || uri.getRawUserInfo() != null || uri.getRawFragment() != null) {
            throw Cli.usage(spec, option + " must not carry a query, user info or fragment: the connection token "
                    + "travels in the Authorization header (--token-file), never in a URL");
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("ws") && !scheme.equals("wss")) {
            throw Cli.usage(spec, option + " must be a ws:// or wss:// URL (the url field of env-gateway's "
                    + "ready line)" + (scheme.isEmpty() ? "" : ", got scheme '" + Cli.shown(scheme) + "'"));
        }
        if (uri.isOpaque() || uri.getHost() == null || uri.getHost().isEmpty()) {
            throw Cli.usage(spec, option + " needs a host: ws://HOST:PORT/PATH or wss://HOST:PORT/PATH");
        }
        // Lower-case scheme (WS://... works too); everything else stays as given.
        return scheme.equals(uri.getScheme()) ? uri : URI.create(scheme + text.substring(scheme.length()));
    }

    /**
     * The non-blank lines of a token or grant file that are not # comments, stripped. A missing file is a usage
     * error (exit 1), an unreadable one a refusal (exit 3). Warns when others may read it.
     */
    static List<String> readSecretLines(CommandSpec spec, Path file, String option) {
        Cli.requireReadableFile(spec, file, option);
        warnIfShared(file, option);
        String content;
        try {
            if (Files.size(file) > MAX_SECRET_FILE) {
                throw Cli.usage(spec, option + " " + file + " is larger than 1 MiB: not a token or grant file");
            }
            content = Files.readString(file, StandardCharsets.UTF_8);
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, option + " file " + file
                    + " is not readable (permission denied)");
        } catch (IOException e) {
            // Never the exception's message: a decoder's could quote the content.
            throw new CliException(ExitCodes.REFUSED, "cannot read " + option + " file " + file + " ("
                    + e.getClass().getSimpleName() + ")");
        }
        List<String> lines = new ArrayList<>();
        content.lines().map(String::strip).filter(l -> !l.isEmpty() && !l.startsWith("#")).forEach(lines::add);
        return lines;
    }

    /**
     * The connection token in {@code file}: exactly one line of printable ASCII without spaces. Errors name
     * {@code option} (about the file) or {@code source} (about its content) and never show the content.
     */
    static String tokenFromFile(CommandSpec spec, Path file, String option, String source) {
        List<String> lines = readSecretLines(spec, file, option);
        if (lines.size() != 1) {
            throw Cli.usage(spec, source + " must hold the token on one line, found "
                    + (lines.isEmpty() ? "nothing" : lines.size() + " lines"));
        }
        return requireToken(spec, lines.get(0), source);
    }

    /** {@code value} when it looks like a connection token, else a usage error naming {@code source} only. */
    static String requireToken(CommandSpec spec, String value, String source) {
        boolean printable = value.chars().allMatch(c -> c > 0x20 && c < 0x7f);
        if (value.isEmpty() || value.length() > MAX_TOKEN_LENGTH || !printable) {
            throw Cli.usage(spec, source + ": not a connection token (expected one line of printable ASCII "
                    + "without spaces, as printed by 'env-gateway token issue'); the value is not shown");
        }
        return value;
    }

    static void warnIfShared(Path file, String option) {
        try {
            if (file.getFileSystem().supportedFileAttributeViews().contains("posix")) {
                Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file);
                if (perms.stream().anyMatch(p -> !p.name().startsWith("OWNER_"))) {
                    log.warn("{} file {} is accessible by group/others ({}); it holds secrets: chmod 600 {}", option,
                            file, PosixFilePermissions.toString(perms), file);
                }
            }
        } catch (IOException | RuntimeException e) {
            // only a warning
        }
    }

    static SslContext clientTls(CommandSpec spec, Path gatewayCa) {
        SslContextBuilder builder = SslContextBuilder.forClient();
        if (gatewayCa != null) {
            Cli.requireReadableFile(spec, gatewayCa, "--gateway-ca");
            builder.trustManager(gatewayCa.toFile());
        }
        try {
            return builder.build();
        } catch (javax.net.ssl.SSLException | IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "cannot load --gateway-ca " + gatewayCa + ": "
                    + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
        }
    }

    /**
     * Creates the state directory (rwx------) if missing. An existing one must be ours and not writable by
     * group/others (it holds the credentials and control.json: exit 3 otherwise); readable is only warned about.
     */
    static void prepareStateDir(Path dir) {
        try {
            if (Files.exists(dir) && !Files.isDirectory(dir)) {
                throw new CliException(ExitCodes.REFUSED, "state directory " + dir + " exists and is not a directory");
            }
            StateFiles.ensureDirectory(dir);
            TrustedPaths.requireTrustedDirectory(dir, "state directory");
        } catch (TrustedPaths.UntrustedException e) {
            throw new CliException(ExitCodes.REFUSED, e.getMessage());
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, "permission denied creating state directory " + dir + " ("
                    + e.getFile() + ")");
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot create state directory " + dir + ": "
                    + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : " " + e.getMessage()));
        }
        try {
            if (dir.getFileSystem().supportedFileAttributeViews().contains("posix")) {
                Set<PosixFilePermission> perms = Files.getPosixFilePermissions(dir);
                if (perms.stream().anyMatch(p -> !p.name().startsWith("OWNER_"))) {
                    log.warn("state directory {} is accessible by group/others ({}); consider chmod 700 {} (the "
                            + "credentials file itself is owner-only)", dir, PosixFilePermissions.toString(perms), dir);
                }
            }
        } catch (IOException | RuntimeException e) {
            // only a warning
        }
    }
}
