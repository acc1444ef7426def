package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.SecretFiles;
import dev.previewtunnel.ingress.session.StateFiles;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import picocli.CommandLine.Model.CommandSpec;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/** Ingress-specific command helpers shared by run, doctor and the control commands. */
final class IngressCli {
    /** Environment variables of the ingress's settings start with this ({@code PTUN_INGRESS_GATEWAY}). */
    static final String ENV_PREFIX = "PTUN_INGRESS_";
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
     * The connection token in {@code file}: exactly one line of printable ASCII without spaces. Errors name
     * {@code option} (about the file) or {@code source} (about its content) and never show the content.
     */
    static String tokenFromFile(CommandSpec spec, Path file, String option, String source) {
        List<String> lines = SecretFiles.readLines(spec, file, option);
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
}
