package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.Converters;
import dev.previewtunnel.cli.SecretFiles;
import dev.previewtunnel.cli.ServiceRunner;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.ingress.refresh.CommandGrantRefresher;
import dev.previewtunnel.ingress.refresh.GrantRefresher;
import dev.previewtunnel.ingress.refresh.UrlGrantRefresher;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The options of {@code run} that fetch a new grant when the gateway refuses an expired or revoked one: a program
 * or an http(s) URL, its arguments or bearer-token file, and a time limit (docs/desktop-ingress.md).
 */
final class GrantRefreshOptions {
    @Option(names = "--grant-refresh-command", paramLabel = "PROGRAM",
            description = "When the gateway refuses a stream because its grant expired or was revoked, run this "
                    + "program (no shell) once and use the first line it prints as the new grant. It gets "
                    + "PTUN_SESSION, PTUN_TARGET, PTUN_GRANT_ID and PTUN_REASON in its environment; its stderr is "
                    + "discarded (default: no refresh).")
    String grantRefreshCommand;

    @Option(names = "--grant-refresh-arg", paramLabel = "ARG",
            description = "An argument for --grant-refresh-command; repeatable, passed in order.")
    List<String> grantRefreshArgs = new ArrayList<>();

    @Option(names = "--grant-refresh-url", paramLabel = "URL",
            description = "Instead of a command: POST {\"session\",\"target\",\"grantId\",\"reason\"} to this "
                    + "http(s) URL; the first line of a 200 answer is the new grant (default: no refresh).")
    String grantRefreshUrl;

    @Option(names = "--grant-refresh-token-file", paramLabel = "FILE",
            description = "File holding a bearer token sent to --grant-refresh-url in the Authorization header.")
    Path grantRefreshTokenFile;

    @Option(names = "--grant-refresh-timeout", paramLabel = "DURATION", converter = Converters.DurationConverter.class,
            defaultValue = "10s",
            description = "How long the refresh command or URL may take (default: 10s).")
    Duration grantRefreshTimeout;

    /**
     * The grant refresh hook from the settings, or null; a command gets its own small thread pool, shut down by
     * {@code runner} at stop.
     */
    GrantRefresher refresher(CommandSpec spec, Settings s, ServiceRunner runner) {
        String command = grantRefreshCommand;
        List<String> args = s.list("grant-refresh-arg", grantRefreshArgs, Settings::text);
        String url = grantRefreshUrl;
        Path bearerFile = grantRefreshTokenFile;
        Duration timeout = s.inRange("grant-refresh-timeout", grantRefreshTimeout, Duration.ofMillis(100),
                Duration.ofMinutes(5));
        if (command != null && url != null) {
            throw Cli.usage(spec, "give either --grant-refresh-command or --grant-refresh-url, not both");
        }
        if (!args.isEmpty() && command == null) {
            throw Cli.usage(spec, "--grant-refresh-arg needs --grant-refresh-command");
        }
        if (bearerFile != null && url == null) {
            throw Cli.usage(spec, "--grant-refresh-token-file needs --grant-refresh-url");
        }
        if (command != null) {
            if (command.contains("/")) {
                Path program = Path.of(command);
                if (!Files.isRegularFile(program) || !Files.isExecutable(program)) {
                    throw s.invalid("grant-refresh-command", "must name an executable file (or a program on the "
                            + "PATH), got '" + Cli.shown(command) + "'");
                }
            }
            List<String> argv = new ArrayList<>();
            argv.add(command);
            argv.addAll(args);
            ExecutorService executor = Executors.newCachedThreadPool(r -> {
                Thread t = new Thread(r, "ptun-grant-refresh");
                t.setDaemon(true);
                return t;
            });
            runner.open(executor::shutdownNow);
            return new CommandGrantRefresher(argv, timeout, executor);
        }
        if (url != null) {
            URI uri;
            try {
                uri = new URI(url);
            } catch (URISyntaxException e) {
                throw s.invalid("grant-refresh-url", "is not a valid URL");
            }
            if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null
                    || uri.getRawQuery() != null || uri.getRawUserInfo() != null) {
                throw s.invalid("grant-refresh-url", "must be an http:// or https:// URL without query or user info "
                        + "(a bearer token goes in --grant-refresh-token-file)");
            }
            String bearer = null;
            if (bearerFile != null) {
                List<String> lines = SecretFiles.readLines(spec, bearerFile, "--grant-refresh-token-file");
                if (lines.size() != 1) {
                    throw Cli.usage(spec, "--grant-refresh-token-file must hold the token on one line");
                }
                bearer = lines.get(0);
            }
            return new UrlGrantRefresher(uri, bearer, timeout);
        }
        return null;
    }
}
