package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.ingress.session.AuthorityMap;
import dev.previewtunnel.ingress.tunnel.EnvironmentGateway;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The options of {@code run} (and {@code doctor}, which checks what {@code run} would use) for sessions that see
 * several environments: a gateway of its own (and its token file) for each environment that does not use the
 * default {@code --gateway}, and the suffix of the virtual hosts ({@code NAME.ENV.SUFFIX:PORT}). Each is a flag, a {@code PTUN_INGRESS_*} variable (repeatable ones
 * comma-separated) and a config-file key (repeatable ones a JSON array of strings), like every other setting.
 */
final class EnvironmentOptions {
    static final String GATEWAY = "environment-gateway";
    static final String TOKEN_FILE = "environment-token-file";
    static final String SUFFIX = "virtual-host-suffix";

    @Option(names = "--" + GATEWAY, paramLabel = "ENV=URL",
            description = "Streams under grants for environment ENV go to this gateway (ws:// or wss://, as for "
                    + "--gateway) with the token of --environment-token-file ENV=FILE, not to --gateway. "
                    + "Repeatable, one per environment; every environment not named here uses --gateway.")
    List<String> gateways = new ArrayList<>();

    @Option(names = "--" + TOKEN_FILE, paramLabel = "ENV=FILE",
            description = "File holding the connection token of ENV's own gateway ('env-gateway token issue' "
                    + "for that environment), one per --environment-gateway. Tokens are only read from files.")
    List<String> tokenFiles = new ArrayList<>();

    @Option(names = "--" + SUFFIX, paramLabel = "SUFFIX",
            description = "Domain under which sessions' virtual hosts NAME.ENV.SUFFIX:PORT live: lower-case DNS "
                    + "labels, e.g. preview.localhost or dev.localhost (default: preview.localhost).")
    String virtualHostSuffix;

    /** The virtual-host suffix from the flag, else the environment, else the config file, else the default. */
    String suffix(Settings s) {
        String suffix = s.string(SUFFIX, virtualHostSuffix, AuthorityMap.DEFAULT_SUFFIX);
        String lower = suffix.toLowerCase(Locale.ROOT);
        if (!AuthorityMap.isValidSuffix(lower)) {
            throw s.invalid(SUFFIX, "must be a DNS name of lower-case labels (letters, digits, '-', at most 63 "
                    + "each, not starting or ending with '-', 190 characters in all, not an IP address), got '"
                    + Cli.shown(suffix) + "'");
        }
        return lower;
    }

    /** One environment's own gateway and the file its token is read from (not read yet). */
    record Endpoint(URI url, Path tokenFile) {
    }

    /**
     * The environments with a gateway of their own, in the order given, each with the token read from its file.
     * Every --environment-gateway needs its --environment-token-file and the other way round; an environment may
     * be named once.
     */
    Map<String, EnvironmentGateway> gateways(CommandSpec spec, Settings s) {
        Map<String, EnvironmentGateway> out = new LinkedHashMap<>();
        endpoints(spec, s).forEach((environment, endpoint) -> {
            String source = "--" + TOKEN_FILE + " " + environment + "=" + endpoint.tokenFile();
            String token = IngressCli.tokenFromFile(spec, endpoint.tokenFile(), "--" + TOKEN_FILE, source);
            out.put(environment, new EnvironmentGateway(endpoint.url(), () -> token));
        });
        return out;
    }

    /**
     * As {@link #gateways}, without reading any token: for {@code doctor}, which reports a token file it cannot
     * use as a failed check instead of stopping. Settings errors are the same as {@code run}'s.
     */
    Map<String, Endpoint> endpoints(CommandSpec spec, Settings s) {
        Map<String, URI> urls = new LinkedHashMap<>();
        for (String item : s.list(GATEWAY, gateways, Settings::text)) {
            String[] pair = split(s, GATEWAY, item, "URL");
            if (urls.put(pair[0], IngressCli.parseGateway(spec, s.name(GATEWAY) + " for " + pair[0], pair[1]))
                    != null) {
                throw s.invalid(GATEWAY, "names environment '" + pair[0] + "' twice");
            }
        }
        Map<String, Path> files = new LinkedHashMap<>();
        for (String item : s.list(TOKEN_FILE, tokenFiles, Settings::text)) {
            String[] pair = split(s, TOKEN_FILE, item, "FILE");
            // Like every path in the config file: relative to the file's directory.
            Path file = s.fromConfigDir(TOKEN_FILE, Settings.toPath(pair[1]));
            if (files.put(pair[0], file) != null) {
                throw s.invalid(TOKEN_FILE, "names environment '" + pair[0] + "' twice");
            }
        }
        for (String environment : files.keySet()) {
            if (!urls.containsKey(environment)) {
                throw s.invalid(TOKEN_FILE, "names environment '" + environment + "', which has no --" + GATEWAY
                        + " " + environment + "=URL");
            }
        }
        Map<String, Endpoint> out = new LinkedHashMap<>();
        urls.forEach((environment, url) -> {
            Path file = files.get(environment);
            if (file == null) {
                throw s.invalid(GATEWAY, "must come with --" + TOKEN_FILE + " " + environment + "=FILE for "
                        + "environment '" + environment + "': each gateway accepts only its own environment's tokens");
            }
            out.put(environment, new Endpoint(url, file));
        });
        return out;
    }

    /** ENV=VALUE as {ENV, VALUE}; the value is not echoed in errors (a URL may be a secret by mistake). */
    private static String[] split(Settings s, String key, String item, String label) {
        int eq = item.indexOf('=');
        if (eq <= 0 || eq == item.length() - 1) {
            throw s.invalid(key, "must be ENV=" + label + ", e.g. staging=" + (label.equals("URL")
                    ? "wss://gw.staging.example:7443/tunnel" : "staging.token"));
        }
        String environment = item.substring(0, eq).strip();
        if (environment.isEmpty() || environment.length() > 128 || environment.contains(",")) {
            throw s.invalid(key, "must be ENV=" + label + " with an environment name of 1 to 128 characters "
                    + "without ','");
        }
        return new String[] {environment, item.substring(eq + 1).strip()};
    }
}
