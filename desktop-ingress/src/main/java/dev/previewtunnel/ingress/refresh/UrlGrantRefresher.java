package dev.previewtunnel.ingress.refresh;

import dev.previewtunnel.json.JsonTrees;
import dev.previewtunnel.mux.wire.TunnelError;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * POSTs {@code {"session","target","grantId","reason"}} as JSON to a URL (the environment's grant authority,
 * e.g. through an authenticated local agent); a 200 answer's body (first line) is the new grant. An optional
 * bearer token for that URL travels in the {@code Authorization} header, never in the URL.
 */
public final class UrlGrantRefresher implements GrantRefresher {

    private final URI url;
    private final String bearer;
    private final Duration timeout;
    private final HttpClient client;

    public UrlGrantRefresher(URI url, String bearer, Duration timeout) {
        if (url.getRawQuery() != null || url.getRawUserInfo() != null) {
            throw new IllegalArgumentException("refresh URL must not carry a query or user info");
        }
        this.url = url;
        this.bearer = bearer;
        this.timeout = timeout;
        this.client = HttpClient.newBuilder().connectTimeout(timeout).build();
    }

    @Override
    public CompletableFuture<String> refresh(String session, String target, String grantId, TunnelError why) {
        String body = JsonTrees.write(JsonTrees.object().put("session", session).put("target", target)
                .put("grantId", grantId).put("reason", why.code()));
        HttpRequest.Builder req = HttpRequest.newBuilder(url).timeout(timeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (bearer != null) {
            req.header("Authorization", "Bearer " + bearer);
        }
        return client.sendAsync(req.build(), HttpResponse.BodyHandlers.ofString()).thenApply(r -> {
            if (r.statusCode() != 200) {
                throw new IllegalStateException("grant refresh URL answered " + r.statusCode());
            }
            String first = r.body().lines().findFirst().orElse("").trim();
            if (first.isEmpty()) {
                throw new IllegalStateException("grant refresh URL returned no grant");
            }
            return first;
        });
    }
}
