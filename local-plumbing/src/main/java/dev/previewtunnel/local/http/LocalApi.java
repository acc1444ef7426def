package dev.previewtunnel.local.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.json.JsonTrees;
import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.util.NetUtil;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

/**
 * Loopback HTTP+JSON plumbing shared by the gateway's admin endpoint and the ingress's control API.
 *
 * <p>Every request is checked in this order before the handler sees it: well-formed HTTP; no {@code Origin}
 * header (a web page, not a local tool, is calling); a loopback {@code Host} (defeats DNS rebinding); the
 * bearer token, compared in constant time. Tokens are random 256-bit values kept in owner-only files by the
 * callers and never printed. The server under it, with its deadlines and caps, is {@link LocalHttpServer}.
 */
public final class LocalApi {

    private LocalApi() {
    }

    /** Answers one authenticated request; runs on an event loop, so it must not block (in-memory work only). */
    @FunctionalInterface
    public interface Handler {
        Response handle(String method, String path, JsonNode body) throws ApiException;
    }

    /**
     * As {@link Handler}, for an answer that may come later: called on the event loop, it returns at once, and the
     * reply is written when the stage completes. A stage failed with an {@link ApiException} is answered as a
     * thrown one; any other failure 500, like a handler's runtime exception.
     */
    @FunctionalInterface
    public interface DeferringHandler {
        CompletionStage<Response> handle(String method, String path, JsonNode body) throws ApiException;
    }

    public record Response(int status, JsonNode body) {
        public static Response ok(JsonNode body) {
            return new Response(200, body);
        }
    }

    /** A refusal with a machine-readable code; the message must be safe to show. */
    public static final class ApiException extends Exception {
        private final int status;
        private final String code;

        public ApiException(int status, String code, String message) {
            super(message, null, false, false);
            this.status = status;
            this.code = code;
        }
    }

    public static ObjectNode object() {
        return JsonTrees.object();
    }

    public static String newToken() {
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(secret);
    }

    /** Binds the API on a loopback address (refuses any other) with {@link LocalHttpServer.Limits#defaults()}. */
    public static Channel bind(EventLoopGroup group, Class<? extends ServerSocketChannel> type,
                               InetSocketAddress listen, String token, String realm, Handler handler)
            throws InterruptedException {
        return bind(group, type, listen, token, realm, handler, LocalHttpServer.Limits.defaults());
    }

    /** As above with the default limits but {@code requestDeadline} for every phase of a connection. */
    public static Channel bind(EventLoopGroup group, Class<? extends ServerSocketChannel> type,
                               InetSocketAddress listen, String token, String realm, Handler handler,
                               java.time.Duration requestDeadline)
            throws InterruptedException {
        return bind(group, type, listen, token, realm, handler,
                LocalHttpServer.Limits.defaults().withRequestTimeout(requestDeadline));
    }

    /** Serves {@code handler} behind the checks above on a {@link LocalHttpServer} with {@code limits}. */
    public static Channel bind(EventLoopGroup group, Class<? extends ServerSocketChannel> type,
                               InetSocketAddress listen, String token, String realm, Handler handler,
                               LocalHttpServer.Limits limits)
            throws InterruptedException {
        return bindDeferring(group, type, listen, token, realm,
                (method, path, body) -> CompletableFuture.completedFuture(handler.handle(method, path, body)), limits);
    }

    /** As above, for a handler whose answers may complete later. */
    public static Channel bindDeferring(EventLoopGroup group, Class<? extends ServerSocketChannel> type,
                               InetSocketAddress listen, String token, String realm, DeferringHandler handler,
                               LocalHttpServer.Limits limits)
            throws InterruptedException {
        byte[] tokenBytes = token.getBytes(StandardCharsets.US_ASCII);
        return LocalHttpServer.bind(group, type, listen, limits, realm,
                request -> answer(request, tokenBytes, realm, handler));
    }

    /** Runs on the event loop: the checks and the handler's call never block. */
    private static CompletionStage<LocalHttpServer.Reply> answer(LocalHttpServer.Request req, byte[] token,
                                                                 String realm, DeferringHandler handler) {
        CompletionStage<Response> response;
        try {
            response = check(req, token, handler);
        } catch (ApiException e) {
            response = CompletableFuture.completedFuture(refusal(e));
        }
        return response.handle((r, failure) -> {
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                    ? failure.getCause() : failure;
            if (cause instanceof ApiException e) {
                return reply(refusal(e), realm);
            }
            if (cause != null) {
                throw cause instanceof RuntimeException re ? re : new CompletionException(cause);
            }
            return reply(r, realm);
        });
    }

    private static Response refusal(ApiException e) {
        return new Response(e.status, object().put("error", e.code).put("message", e.getMessage()));
    }

    private static LocalHttpServer.Reply reply(Response response, String realm) {
        Map<String, String> headers = response.status() == 401
                ? Map.of(HttpHeaderNames.WWW_AUTHENTICATE.toString(), "Bearer realm=\"" + realm + "\"")
                : Map.of();
        return new LocalHttpServer.Reply(response.status(), "application/json",
                (JsonTrees.write(response.body()) + "\n").getBytes(StandardCharsets.UTF_8), headers);
    }

    private static CompletionStage<Response> check(LocalHttpServer.Request req, byte[] token,
                                                   DeferringHandler handler) throws ApiException {
        if (req.headers().contains(HttpHeaderNames.ORIGIN)) {
            throw new ApiException(403, "browser_requests_refused", "this endpoint does not serve web pages");
        }
        if (!loopbackHost(req.headers().get(HttpHeaderNames.HOST))) {
            throw new ApiException(403, "host_not_allowed", "Host must be a loopback name or address");
        }
        String auth = req.headers().get(HttpHeaderNames.AUTHORIZATION);
        if (auth == null || !auth.regionMatches(true, 0, "Bearer ", 0, 7) || !MessageDigest.isEqual(token,
                auth.substring(7).trim().getBytes(StandardCharsets.US_ASCII))) {
            throw new ApiException(401, "token_refused", "API token missing or wrong");
        }
        JsonNode body = null;
        if (req.hasBody()) {
            try {
                body = JsonTrees.parse(new String(req.body(), StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new ApiException(400, "bad_json", "body is not JSON");
            }
        }
        return handler.handle(req.method(), req.path(), body);
    }

    /** {@code localhost}, {@code 127.x.y.z} or {@code [::1]}, with or without a port. */
    public static boolean loopbackHost(String host) {
        if (host == null) {
            return false;
        }
        String h = host;
        if (h.startsWith("[")) {
            int close = h.indexOf(']');
            h = close > 0 ? h.substring(1, close) : h;
        } else if (h.indexOf(':') > 0 && h.indexOf(':') == h.lastIndexOf(':')) {
            h = h.substring(0, h.indexOf(':'));
        }
        if ("localhost".equalsIgnoreCase(h)) {
            return true;
        }
        byte[] addr = NetUtil.createByteArrayFromIpAddressString(h);
        if (addr == null) {
            return false;
        }
        if (addr.length == 4) {
            return addr[0] == 127;
        }
        for (int i = 0; i < 15; i++) {
            if (addr[i] != 0) {
                return false;
            }
        }
        return addr[15] == 1;
    }

    /** A small helper for handlers: a required, non-blank, bounded text field. */
    public static String text(JsonNode body, String field, boolean required) throws ApiException {
        JsonNode n = body == null ? null : body.get(field);
        if (n == null || n.isNull()) {
            if (required) {
                throw new ApiException(400, "bad_request", "missing \"" + field + "\"");
            }
            return null;
        }
        if (!n.isTextual() || n.asText().isBlank() || n.asText().length() > 16 * 1024) {
            throw new ApiException(400, "bad_request", "\"" + field + "\" must be a non-empty string");
        }
        return n.asText();
    }
}
