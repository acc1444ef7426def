package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.cli.TrustedPaths;
import dev.previewtunnel.ingress.control.ControlServer;
import dev.previewtunnel.json.JsonTrees;
import dev.previewtunnel.local.http.LocalApi;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Talks to a running ingress's control API, found through {@code STATE_DIR/control.json} (address and token;
 * the token is only ever sent to that loopback address, in the Authorization header). Failures become
 * {@link CliException}s: exit 2 when no ingress runs or answers, 3 when the token is refused or the state directory
 * or control.json is another user's or open to group/others, 1 for a refused
 * argument (no such session...).
 */
final class ControlClient {

    /** The options every control command takes (a picocli mixin). */
    static final class Options {
        @Option(names = "--state-dir", paramLabel = "DIR",
                description = "State directory of the running 'run' (default: $XDG_STATE_HOME/preview-tunnel, "
                        + "else ~/.local/state/preview-tunnel; env PTUN_INGRESS_STATE_DIR).")
        Path stateDir;

        @Option(names = "--config", paramLabel = "FILE",
                description = "The ingress's JSON config file, for its state-dir (default: $PTUN_INGRESS_CONFIG).")
        Path config;

        ControlClient client(CommandSpec spec) {
            Settings s = Settings.load(spec, config, IngressCli.ENV_PREFIX, RunCommand.CONFIG_KEYS);
            return open(s.path("state-dir", stateDir, IngressCli.defaultStateDir()));
        }
    }

    private final Path stateFile;
    private final URI base;
    private final String token;
    private final long pid;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(3)).build();

    private ControlClient(Path stateFile, URI base, String token, long pid) {
        this.stateFile = stateFile;
        this.base = base;
        this.token = token;
        this.pid = pid;
    }

    static ControlClient open(Path stateDir) {
        Path file = stateDir.resolve(ControlServer.STATE_FILE);
        JsonNode state;
        try {
            // control.json holds the token and says where to send it: only a file no other user could have
            // written (or read), in a directory no other user can write, is believed.
            if (Files.isDirectory(stateDir)) {
                TrustedPaths.requireTrustedDirectory(stateDir, "state directory");
            }
            if (Files.exists(file)) {
                TrustedPaths.requireOwnerOnlyFile(file, "control file");
            }
            state = JsonTrees.parse(Files.readString(file));
        } catch (TrustedPaths.UntrustedException e) {
            throw new CliException(ExitCodes.REFUSED, e.getMessage());
        } catch (NoSuchFileException e) {
            throw new CliException(ExitCodes.UNREACHABLE, "no desktop-ingress is running with state directory "
                    + stateDir + " (no " + ControlServer.STATE_FILE + " there): start one with 'desktop-ingress run "
                    + "--gateway URL --token-file FILE', or give the --state-dir it uses");
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, "permission denied reading " + file
                    + ": run this as the user that runs the ingress");
        } catch (IOException e) {
            // Never Jackson's message: it could quote the token.
            throw new CliException(ExitCodes.REFUSED, file + " is not readable as JSON (" + e.getClass().getSimpleName()
                    + ")");
        }
        String url = state == null ? "" : state.path("url").asText("");
        String token = state == null ? "" : state.path("token").asText("");
        URI base;
        try {
            base = new URI(url);
        } catch (URISyntaxException e) {
            throw new CliException(ExitCodes.REFUSED, file + " holds no valid control URL");
        }
        if (!"http".equals(base.getScheme()) || base.getHost() == null || !LocalApi.loopbackHost(base.getHost())
                || token.isEmpty()) {
            throw new CliException(ExitCodes.REFUSED, file + " does not hold a loopback control URL and a token; "
                    + "restart the ingress to rewrite it");
        }
        return new ControlClient(file, base, token, state.path("pid").asLong(-1));
    }

    JsonNode get(String path) {
        return send(HttpRequest.newBuilder(base.resolve(path)).GET());
    }

    JsonNode post(String path, JsonNode body) {
        return send(HttpRequest.newBuilder(base.resolve(path))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(JsonTrees.write(body))));
    }

    JsonNode delete(String path) {
        return send(HttpRequest.newBuilder(base.resolve(path)).DELETE());
    }

    private JsonNode send(HttpRequest.Builder request) {
        HttpResponse<String> response;
        try {
            response = http.send(request.timeout(Duration.ofSeconds(10))
                    .header("Authorization", "Bearer " + token).build(), HttpResponse.BodyHandlers.ofString());
        } catch (ConnectException | HttpConnectTimeoutException e) {
            boolean alive = pid > 0 && ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
            throw new CliException(ExitCodes.UNREACHABLE, "the desktop-ingress recorded in " + stateFile
                    + (pid > 0 ? " (pid " + pid + ")" : "") + " does not answer at " + base
                    + (alive ? "; it may be starting or stuck" : "; it is not running any more (a stale file: "
                    + "start the ingress again, or delete the file)"));
        } catch (HttpTimeoutException e) {
            throw new CliException(ExitCodes.UNREACHABLE, "the desktop-ingress at " + base + " did not answer in time");
        } catch (IOException e) {
            throw new CliException(ExitCodes.UNREACHABLE, "cannot talk to the desktop-ingress at " + base + " ("
                    + e.getClass().getSimpleName() + ")");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CliException(ExitCodes.INTERNAL, "interrupted");
        }
        JsonNode body;
        try {
            body = JsonTrees.parse(response.body());
        } catch (IOException e) {
            body = null;
        }
        int status = response.statusCode();
        if (status == 200 && body != null) {
            return body;
        }
        String reason = body != null && body.has("error")
                ? body.path("error").asText() + ": " + body.path("message").asText()
                : "HTTP " + status;
        if (status == 401 || status == 403) {
            throw new CliException(ExitCodes.REFUSED, "the control API at " + base + " refused the request (" + reason
                    + "); is another ingress using " + stateFile.getParent() + "?");
        }
        if (status == 400 || status == 404 || status == 409) {
            throw new CliException(ExitCodes.USAGE, reason);
        }
        throw new CliException(ExitCodes.INTERNAL, "the control API answered " + reason);
    }

    /** For messages: a value echoed back, one short line. */
    static String shown(String s) {
        return Cli.shown(s);
    }
}
