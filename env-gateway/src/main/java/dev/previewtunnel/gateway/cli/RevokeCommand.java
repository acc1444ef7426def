package dev.previewtunnel.gateway.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.cli.TrustedPaths;
import dev.previewtunnel.mux.local.LocalApi;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;

/** {@code revoke}: asks a running gateway's admin endpoint to revoke a grant or a whole browser session. */
@Command(name = "revoke",
        mixinStandardHelpOptions = true,
        versionProvider = GatewayVersionProvider.class,
        exitCodeOnInvalidInput = ExitCodes.USAGE,
        exitCodeOnExecutionException = ExitCodes.INTERNAL,
        footer = GatewayMain.FOOTER,
        sortOptions = false,
        description = {
                "Revoke a grant (by its id, the jti) or every grant of a browser session on a running gateway: "
                        + "refused from now on, and the live streams opened with it (an HMR WebSocket included) "
                        + "are reset at once.",
                "Talks to the admin endpoint of 'serve --admin-listen': found through STATE_DIR/"
                        + GatewayCli.ADMIN_STATE_FILE + " (the same --state-dir, PTUN_GATEWAY_STATE_DIR or "
                        + "config file as serve), or given with --admin and --admin-token-file.",
                "Prints the endpoint's JSON answer on stdout, e.g. "
                        + "{\"revoked\":\"grant\",\"id\":\"...\",\"closedStreams\":1}. Exit 2 when no admin "
                        + "endpoint answers, 3 when it refuses the token or the list is full (--max-revocations), "
                        + "or when the state directory, admin.json or the token file is another user's or open "
                        + "to group/others."})
final class RevokeCommand implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Spec
    CommandSpec spec;

    static final class What {
        @Option(names = "--grant", paramLabel = "JTI", required = true,
                description = "Id (jti) of the grant to revoke, as in the gateway's audit lines.")
        String grant;

        @Option(names = "--session", paramLabel = "SESSION", required = true,
                description = "Browser session whose grants (all issued until now) to revoke.")
        String session;
    }

    @ArgGroup(exclusive = true, multiplicity = "1")
    What what;

    @Option(names = "--state-dir", paramLabel = "DIR",
            description = "State directory of the running 'serve' (default: $XDG_STATE_HOME/preview-tunnel-gateway, "
                    + "else ~/.local/state/preview-tunnel-gateway).")
    Path stateDir;

    @Option(names = "--config", paramLabel = "FILE",
            description = "The gateway's JSON config file, for its state-dir (default: $PTUN_GATEWAY_CONFIG).")
    Path config;

    @Option(names = "--admin", paramLabel = "URL",
            description = "The admin endpoint's URL (the admin field of serve's ready line), e.g. "
                    + "http://127.0.0.1:7444; needs --admin-token-file. Must be loopback.")
    String admin;

    @Option(names = "--admin-token-file", paramLabel = "FILE",
            description = "File holding the admin token (the adminTokenFile field of serve's ready line).")
    Path adminTokenFile;

    @Override
    public Integer call() {
        String id = what.grant != null ? what.grant : what.session;
        Cli.requireNonBlank(spec, id, what.grant != null ? "--grant" : "--session");
        URI url;
        Path tokenFile;
        if (admin != null || adminTokenFile != null) {
            if (admin == null || adminTokenFile == null) {
                throw Cli.usage(spec, "--admin and --admin-token-file must be given together");
            }
            url = adminUrl(admin);
            tokenFile = adminTokenFile;
        } else {
            Settings s = Settings.load(spec, config, GatewayCli.ENV_PREFIX, ServeCommand.CONFIG_KEYS);
            Path dir = s.path("state-dir", stateDir, GatewayCli.defaultStateDir());
            Path stateFile = dir.resolve(GatewayCli.ADMIN_STATE_FILE);
            // admin.json says where the token goes: one another user could rewrite would send it to them.
            requireTrusted(dir, null);
            JsonNode state = readState(stateFile);
            url = adminUrl(state.path("url").asText(""));
            tokenFile = Path.of(state.path("tokenFile").asText(dir.resolve(GatewayCli.ADMIN_TOKEN_FILE).toString()));
        }
        if (Files.exists(tokenFile)) {
            requireTrusted(null, tokenFile); // before reading it: a file others can swap holds no secret of ours
        }
        String token = readToken(tokenFile);
        String body = Cli.json().put(what.grant != null ? "grant" : "session", id).toString();
        HttpResponse<String> response = post(url.resolve("/v1/revoke"), token, body);
        String answer = response.body() == null ? "" : response.body().strip();
        int status = response.statusCode();
        if (status == 200) {
            Cli.printLine(answer);
            return ExitCodes.OK;
        }
        String reason = reason(answer);
        if (status == 401 || status == 403) {
            throw new CliException(ExitCodes.REFUSED, "the admin endpoint at " + url + " refused the request ("
                    + reason + "); is " + tokenFile + " the token file of the gateway listening there?");
        }
        if (status == 507) {
            throw new CliException(ExitCodes.REFUSED, "the gateway refused the revocation (" + reason + ")");
        }
        if (status == 400) {
            throw Cli.usage(spec, "the admin endpoint refused the request as malformed (" + reason + ")");
        }
        throw new CliException(ExitCodes.INTERNAL, "the admin endpoint answered HTTP " + status + " (" + reason + ")");
    }

    private URI adminUrl(String text) {
        URI uri;
        try {
            uri = new URI(text);
        } catch (URISyntaxException e) {
            throw Cli.usage(spec, "--admin must be a URL like http://127.0.0.1:7444, got '" + Cli.shown(text) + "'");
        }
        if (!"http".equals(uri.getScheme()) || uri.getHost() == null || uri.getPort() < 0
                || !LocalApi.loopbackHost(uri.getHost()) || uri.getRawUserInfo() != null || uri.getRawQuery() != null) {
            throw Cli.usage(spec, "the admin URL must be http://LOOPBACK:PORT (e.g. http://127.0.0.1:7444): the "
                    + "admin token is never sent anywhere else; got '" + Cli.shown(text) + "'");
        }
        return uri;
    }

    /** The state directory (when given) and the token file (when given) must be ours alone (exit 3). */
    private static void requireTrusted(Path dir, Path tokenFile) {
        try {
            if (dir != null && Files.isDirectory(dir)) {
                TrustedPaths.requireTrustedDirectory(dir, "state directory");
                Path state = dir.resolve(GatewayCli.ADMIN_STATE_FILE);
                if (Files.exists(state)) {
                    TrustedPaths.requireOwnerOnlyFile(state, "admin address file");
                }
            }
            if (tokenFile != null) {
                TrustedPaths.requireOwnerOnlyFile(tokenFile, "admin token file");
            }
        } catch (TrustedPaths.UntrustedException e) {
            throw new CliException(ExitCodes.REFUSED, e.getMessage());
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot check " + (tokenFile != null ? tokenFile : dir) + " ("
                    + e.getClass().getSimpleName() + ")");
        }
    }

    private static JsonNode readState(Path file) {
        try {
            return JSON.readTree(Files.readString(file));
        } catch (NoSuchFileException e) {
            throw new CliException(ExitCodes.UNREACHABLE, "no running gateway with an admin endpoint uses this state "
                    + "directory (" + file + " does not exist): start one with 'env-gateway serve ... "
                    + "--admin-listen 127.0.0.1:0', or give --admin URL --admin-token-file FILE");
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, "permission denied reading " + file);
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot read " + file + " (" + e.getClass().getSimpleName() + ")");
        }
    }

    private String readToken(Path file) {
        Cli.requireReadableFile(spec, file, "--admin-token-file");
        try {
            String token = Files.readString(file, StandardCharsets.UTF_8).strip();
            if (token.isEmpty() || token.length() > 1024 || !token.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
                throw new CliException(ExitCodes.REFUSED, "admin token file " + file + " does not hold a token");
            }
            return token;
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, "admin token file " + file + " is not readable (permission denied)");
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot read admin token file " + file + " ("
                    + e.getClass().getSimpleName() + ")");
        }
    }

    private static HttpResponse<String> post(URI uri, String token, String body) {
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5))
                .version(HttpClient.Version.HTTP_1_1).build();
        HttpRequest request = HttpRequest.newBuilder(uri)
                .timeout(Duration.ofSeconds(10))
                .header("Authorization", "Bearer " + token)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
        try {
            return client.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (ConnectException | HttpConnectTimeoutException e) {
            throw new CliException(ExitCodes.UNREACHABLE, "no admin endpoint answers at " + uri.resolve("/")
                    + " (is 'env-gateway serve --admin-listen ...' running?)");
        } catch (HttpTimeoutException e) {
            throw new CliException(ExitCodes.UNREACHABLE, "the admin endpoint at " + uri.resolve("/")
                    + " did not answer in time");
        } catch (IOException e) {
            throw new CliException(ExitCodes.UNREACHABLE, "cannot talk to the admin endpoint at " + uri.resolve("/")
                    + " (" + e.getClass().getSimpleName() + ")");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CliException(ExitCodes.INTERNAL, "interrupted");
        }
    }

    /** {@code error: message} from a LocalApi refusal body, else the body cut short. */
    static String reason(String body) {
        try {
            JsonNode node = JSON.readTree(body);
            if (node != null && node.has("error")) {
                return node.path("error").asText() + ": " + node.path("message").asText();
            }
        } catch (IOException e) {
            // not JSON
        }
        return Cli.shown(body);
    }
}
