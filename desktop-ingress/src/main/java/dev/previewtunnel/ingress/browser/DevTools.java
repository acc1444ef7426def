package dev.previewtunnel.ingress.browser;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.json.JsonTrees;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * A minimal Chrome DevTools Protocol client: one connection to the browser endpoint (a WebSocket, or the pipe of
 * {@code --remote-debugging-pipe}; Jackson for the JSON), commands matched to answers by id, flattened target sessions ({@code sessionId} on each message),
 * events dispatched in order on one thread so that a handler may itself send commands. Used by
 * {@link BrowserLauncher} to answer the proxy credential, and by the security spikes and benchmarks to drive pages.
 * Exceptions and logs carry method names and DevTools errors, never a command's parameters (they may hold the
 * proxy credential: {@code Fetch.continueWithAuth}).
 */
public final class DevTools implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DevTools.class);
    private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(30);

    /** An event handler: {@code params} and the session it came from (null for the browser session). */
    public interface Listener {
        void onEvent(JsonNode params, String sessionId);
    }

    private final AtomicLong ids = new AtomicLong();
    private final Map<Long, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();
    private final Map<String, List<Listener>> listeners = new ConcurrentHashMap<>();
    private final ExecutorService events;
    private final CompletableFuture<Void> closed = new CompletableFuture<>();
    private final DevToolsTransport transport;

    private DevTools(Function<DevToolsTransport.Inbound, DevToolsTransport> transport) {
        this.events = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "devtools-events");
            t.setDaemon(true);
            return t;
        });
        try {
            this.transport = transport.apply(new DevToolsTransport.Inbound() {
                @Override
                public void message(String text) {
                    dispatch(text);
                }

                @Override
                public void ended(String why) {
                    failAll(why);
                }
            });
        } catch (RuntimeException e) {
            events.shutdownNow();
            throw e;
        }
    }

    /** Connects to a browser's DevTools endpoint, e.g. {@code ws://127.0.0.1:PORT/devtools/browser/ID}. */
    public static DevTools connect(URI endpoint) {
        return new DevTools(inbound -> WebSocketTransport.open(endpoint, inbound));
    }

    /** Talks to a browser started with {@code --remote-debugging-pipe} (see {@link PipeTransport}). */
    static DevTools overPipe(OutputStream toBrowser, InputStream fromBrowser, Runnable wake) {
        return new DevTools(inbound -> PipeTransport.start(toBrowser, fromBrowser, wake, inbound));
    }

    /**
     * The browser endpoint a browser started with {@code --remote-debugging-port} names in its
     * {@code DevToolsActivePort} file; empty while the file is missing or being written.
     */
    public static Optional<URI> endpointIn(Path portFile) {
        try {
            String[] lines = Files.readString(portFile, StandardCharsets.UTF_8).split("\n");
            if (lines.length < 2 || lines[0].isBlank() || lines[1].isBlank()) {
                return Optional.empty();
            }
            return Optional.of(URI.create("ws://127.0.0.1:" + Integer.parseInt(lines[0].trim()) + lines[1].trim()));
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
    }

    public static ObjectNode params() {
        return JsonTrees.object();
    }

    /** Sends a command; the future completes with its {@code result} or fails with {@link DevToolsException}. */
    public CompletableFuture<JsonNode> sendAsync(String method, ObjectNode params, String sessionId) {
        long id = ids.incrementAndGet();
        ObjectNode msg = JsonTrees.object();
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
            synchronized (transport) {
                // One outstanding send at a time (the JDK WebSocket requires it; a pipe must not interleave).
                transport.send(JsonTrees.write(msg));
            }
        } catch (IOException e) {
            pending.remove(id);
            answer.completeExceptionally(new DevToolsException(method + ": cannot send: " + e.getMessage()));
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
            transport.close();
        } finally {
            failAll("closed by the client");
            events.shutdownNow();
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
            msg = JsonTrees.parse(text);
        } catch (IOException e) {
            LOG.warn("DevTools: a message that is not JSON was ignored ({} chars)", text.length());
            return;
        }
        if (msg.has("id")) {
            CompletableFuture<JsonNode> f = pending.remove(msg.get("id").asLong());
            if (f != null) {
                if (msg.has("error")) {
                    f.completeExceptionally(new DevToolsException(JsonTrees.write(msg.get("error"))));
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
