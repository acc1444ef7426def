package dev.previewtunnel.ingress.browser;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A minimal Chrome DevTools Protocol client: one WebSocket to the browser endpoint (JDK {@link WebSocket},
 * Jackson), commands matched to answers by id, flattened target sessions ({@code sessionId} on each message),
 * events dispatched in order on one thread so that a handler may itself send commands. Used by
 * {@link BrowserLauncher} to answer the proxy credential, and by the security spikes and benchmarks to drive pages.
 * Exceptions and logs carry method names and DevTools errors, never a command's parameters (they may hold the
 * proxy credential: {@code Fetch.continueWithAuth}).
 */
public final class DevTools implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DevTools.class);
    public static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(30);

    /** An event handler: {@code params} and the session it came from (null for the browser session). */
    public interface Listener {
        void onEvent(JsonNode params, String sessionId);
    }

    private final HttpClient http;
    private final ExecutorService httpThreads;
    private final WebSocket socket;
    private final AtomicLong ids = new AtomicLong();
    private final Map<Long, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();
    private final Map<String, List<Listener>> listeners = new ConcurrentHashMap<>();
    private final ExecutorService events;
    private final CompletableFuture<Void> closed = new CompletableFuture<>();

    private DevTools(HttpClient http, ExecutorService httpThreads, URI endpoint, ExecutorService events) {
        this.http = http;
        this.httpThreads = httpThreads;
        this.events = events;
        try {
            this.socket = http.newWebSocketBuilder()
                    .connectTimeout(Duration.ofSeconds(10))
                    .buildAsync(endpoint, new Receiver())
                    .get(15, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted connecting to " + endpoint, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("cannot open the DevTools WebSocket " + endpoint, e);
        }
    }

    /** Connects to a browser's DevTools endpoint, e.g. {@code ws://127.0.0.1:PORT/devtools/browser/ID}. */
    public static DevTools connect(URI endpoint) {
        // No proxy for the DevTools socket itself, whatever the JVM's defaults are.
        ExecutorService httpThreads = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "devtools-http");
            t.setDaemon(true);
            return t;
        });
        HttpClient http = HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY).executor(httpThreads)
                .connectTimeout(Duration.ofSeconds(10)).build();
        ExecutorService events = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "devtools-events");
            t.setDaemon(true);
            return t;
        });
        try {
            return new DevTools(http, httpThreads, endpoint, events);
        } catch (RuntimeException e) {
            httpThreads.shutdownNow();
            events.shutdownNow();
            throw e;
        }
    }

    public static ObjectNode params() {
        return JSON.createObjectNode();
    }

    /** Sends a command; the future completes with its {@code result} or fails with {@link DevToolsException}. */
    public CompletableFuture<JsonNode> sendAsync(String method, ObjectNode params, String sessionId) {
        long id = ids.incrementAndGet();
        ObjectNode msg = JSON.createObjectNode();
        msg.put("id", id);
        msg.put("method", method);
        msg.set("params", params == null ? params() : params);
        if (sessionId != null) {
            msg.put("sessionId", sessionId);
        }
        CompletableFuture<JsonNode> answer = new CompletableFuture<>();
        pending.put(id, answer);
        if (closed.isDone()) {
            pending.remove(id);
            answer.completeExceptionally(new DevToolsException(method + ": the DevTools connection is closed"));
            return answer;
        }
        try {
            synchronized (socket) {
                // The JDK WebSocket allows one outstanding send at a time.
                socket.sendText(msg.toString(), true).get(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            pending.remove(id);
            answer.completeExceptionally(new DevToolsException(method + ": interrupted while sending"));
        } catch (ExecutionException | TimeoutException e) {
            pending.remove(id);
            answer.completeExceptionally(new DevToolsException(method + ": cannot send: " + e));
        }
        return answer;
    }

    /** Sends a command and waits (bounded) for its answer. */
    public JsonNode send(String method, ObjectNode params, String sessionId) {
        return await(sendAsync(method, params, sessionId), method, COMMAND_TIMEOUT);
    }

    public JsonNode send(String method, ObjectNode params) {
        return send(method, params, null);
    }

    static JsonNode await(CompletableFuture<JsonNode> f, String what, Duration timeout) {
        try {
            return f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DevToolsException(what + ": interrupted");
        } catch (TimeoutException e) {
            throw new DevToolsException(what + ": no answer within " + timeout);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof DevToolsException c) {
                throw new DevToolsException(c.getMessage(), c);
            }
            throw new DevToolsException(what + ": " + e.getCause(), e.getCause());
        }
    }

    /** Registers a handler for an event method (e.g. {@code Fetch.requestPaused}), for every session. */
    public void on(String method, Listener listener) {
        listeners.computeIfAbsent(method, k -> new CopyOnWriteArrayList<>()).add(listener);
    }

    public boolean isClosed() {
        return closed.isDone();
    }

    @Override
    public void close() {
        try {
            if (!closed.isDone()) {
                socket.sendClose(WebSocket.NORMAL_CLOSURE, "bye").get(2, TimeUnit.SECONDS);
            }
        } catch (Exception e) {
            // the browser may already be gone
        } finally {
            socket.abort();
            failAll("closed by the client");
            events.shutdownNow();
            httpThreads.shutdownNow();
        }
    }

    private void failAll(String why) {
        closed.complete(null);
        for (Map.Entry<Long, CompletableFuture<JsonNode>> e : pending.entrySet()) {
            e.getValue().completeExceptionally(new DevToolsException("DevTools connection " + why));
        }
        pending.clear();
    }

    private void dispatch(String text) {
        JsonNode msg;
        try {
            msg = JSON.readTree(text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        if (msg.has("id")) {
            CompletableFuture<JsonNode> f = pending.remove(msg.get("id").asLong());
            if (f != null) {
                if (msg.has("error")) {
                    f.completeExceptionally(new DevToolsException(msg.get("error").toString()));
                } else {
                    f.complete(msg.path("result"));
                }
            }
            return;
        }
        String method = msg.path("method").asText();
        List<Listener> ls = listeners.get(method);
        if (ls == null) {
            return;
        }
        String sessionId = msg.hasNonNull("sessionId") ? msg.get("sessionId").asText() : null;
        JsonNode params = msg.path("params");
        events.execute(() -> {
            for (Listener l : ls) {
                try {
                    l.onEvent(params, sessionId);
                } catch (RuntimeException e) {
                    LOG.warn("DevTools: handler for {} failed: {}", method, e.toString());
                }
            }
        });
    }

    private final class Receiver implements WebSocket.Listener {
        private final StringBuilder partial = new StringBuilder();

        @Override
        public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
            partial.append(data);
            if (last) {
                String text = partial.toString();
                partial.setLength(0);
                dispatch(text);
            }
            webSocket.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
            failAll("closed by the browser (" + statusCode + ")");
            return null;
        }

        @Override
        public void onError(WebSocket webSocket, Throwable error) {
            failAll("failed: " + error);
        }
    }

    /** A DevTools command failed or timed out. */
    public static final class DevToolsException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public DevToolsException(String message) {
            super(message);
        }

        DevToolsException(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
