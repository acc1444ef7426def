package dev.previewtunnel.gateway.admin;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.CliException;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.cli.TrustedPaths;

import dev.previewtunnel.json.JsonTrees;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
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

/**
 * The admin endpoint's client side, as {@code revoke} uses it: where a running {@code serve} announced it (its
 * address file in the state directory), its token (read only from an owner-only file: one others could swap holds
 * no secret of ours), and the revocation request. A failure is a {@link CliException} with the exit code to
 * return: 2 when nothing answers, 3 for a refusal or a file others could change.
 */
public final class AdminClient {

    /** Where the endpoint listens and where its token is, as serve wrote them (never the token itself). */
    public record Announcement(String url, Path tokenFile) {
    }

    /** The endpoint's answer: its HTTP status and body. */
    public record Answer(int status, String body) {
        /** {@code error: message} from a refusal body, else the body cut short. */
        public String reason() {
            try {
                JsonNode node = JsonTrees.parse(body);
                if (node != null && node.has("error")) {
                    return node.path("error").asText() + ": " + node.path("message").asText();
                }
            } catch (IOException e) {
                // not JSON
            }
            return Cli.shown(body);
        }
    }

    private final URI url;
    private final String token;

    public AdminClient(URI url, String token) {
        this.url = url;
        this.token = token;
    }

    /**
     * Reads the announcement serve left in {@code stateDir/fileName}; the directory and the file must be ours
     * alone, since the file says where the token goes. {@code defaultTokenFile} when it names none.
     */
    public static Announcement announced(Path stateDir, String fileName, Path defaultTokenFile) {
        Path file = stateDir.resolve(fileName);
        try {
            if (Files.isDirectory(stateDir)) {
                TrustedPaths.requireTrustedDirectory(stateDir, "state directory");
                if (Files.exists(file)) {
                    TrustedPaths.requireOwnerOnlyFile(file, "admin address file");
                }
            }
        } catch (IOException e) {
            throw untrusted(stateDir, e);
        }
        JsonNode state;
        try {
            state = JsonTrees.parse(Files.readString(file));
        } catch (NoSuchFileException e) {
            throw new CliException(ExitCodes.UNREACHABLE, "no running gateway with an admin endpoint uses this state "
                    + "directory (" + file + " does not exist): start one with 'env-gateway serve ... "
                    + "--admin-listen 127.0.0.1:0', or give --admin URL --admin-token-file FILE");
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, "permission denied reading " + file);
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot read " + file + " ("
                    + e.getClass().getSimpleName() + ")");
        }
        return new Announcement(state.path("url").asText(""),
                Path.of(state.path("tokenFile").asText(defaultTokenFile.toString())));
    }

    /** The token in {@code file}, which must be owner-only (checked before it is read) and hold one token. */
    public static String readToken(Path file) {
        try {
            TrustedPaths.requireOwnerOnlyFile(file, "admin token file");
        } catch (IOException e) {
            throw untrusted(file, e);
        }
        try {
            String token = Files.readString(file, StandardCharsets.UTF_8).strip();
            if (token.isEmpty() || token.length() > 1024 || !token.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
                throw new CliException(ExitCodes.REFUSED, "admin token file " + file + " does not hold a token");
            }
            return token;
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, "admin token file " + file
                    + " is not readable (permission denied)");
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot read admin token file " + file + " ("
                    + e.getClass().getSimpleName() + ")");
        }
    }

    /** {@code POST /v1/revoke} of a grant ({@code what} "grant") or a session ("session") by its id. */
    public Answer revoke(String what, String id) {
        String body = JsonTrees.write(Cli.json().put(what, id));
        HttpResponse<String> response = post(url.resolve("/v1/revoke"), body);
        return new Answer(response.statusCode(), response.body() == null ? "" : response.body().strip());
    }

    private HttpResponse<String> post(URI uri, String body) {
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

    /** A file or directory others could change (exit 3), or one whose ownership cannot be checked. */
    private static CliException untrusted(Path path, IOException e) {
        if (e instanceof TrustedPaths.UntrustedException) {
            return new CliException(ExitCodes.REFUSED, e.getMessage());
        }
        return new CliException(ExitCodes.REFUSED, "cannot check " + path + " (" + e.getClass().getSimpleName() + ")");
    }
}
