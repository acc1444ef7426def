package dev.previewtunnel.spikes.browser;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.ingress.browser.DevTools;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * One tab, through a flattened DevTools session. Requests are intercepted with {@code Fetch} only to answer the
 * proxy's 407 ({@code Fetch.authRequired} → {@code ProvideCredentials} with the session's credential, the way
 * Playwright and Electron's {@code login} event do); everything else is continued unchanged. Page JavaScript
 * never sees the credential.
 */
public final class Page {
    private static final Duration NAVIGATION_TIMEOUT = Duration.ofSeconds(30);

    private final DevTools cdp;
    private final String targetId;
    private final String sessionId;
    private final String username;
    private final String password;
    private final AtomicInteger proxyChallenges = new AtomicInteger();
    private final AtomicInteger pausedRequests = new AtomicInteger();
    private final List<JsonNode> loadingFailures = new CopyOnWriteArrayList<>();
    private final List<JsonNode> responses = new CopyOnWriteArrayList<>();
    private final List<JsonNode> scripts = new CopyOnWriteArrayList<>();
    private final List<String> console = new CopyOnWriteArrayList<>();
    /** Requests sent and not finished (by request id): what a timed-out wait reports, to tell a hung fetch apart. */
    private final java.util.Map<String, String> unfinished = new java.util.concurrent.ConcurrentHashMap<>();
    private final AtomicReference<CompletableFuture<Void>> load = new AtomicReference<>(new CompletableFuture<>());

    Page(DevTools cdp, String targetId, String sessionId, String username, String password) {
        this.cdp = cdp;
        this.targetId = targetId;
        this.sessionId = sessionId;
        this.username = username;
        this.password = password;
        cdp.on("Page.loadEventFired", (p, s) -> {
            if (sessionId.equals(s)) {
                load.get().complete(null);
            }
        });
        cdp.on("Network.loadingFailed", (p, s) -> {
            if (sessionId.equals(s)) {
                loadingFailures.add(p);
                unfinished.remove(p.path("requestId").asText());
            }
        });
        cdp.on("Network.requestWillBeSent", (p, s) -> {
            if (sessionId.equals(s)) {
                unfinished.put(p.path("requestId").asText(), p.path("request").path("url").asText());
            }
        });
        cdp.on("Network.loadingFinished", (p, s) -> {
            if (sessionId.equals(s)) {
                unfinished.remove(p.path("requestId").asText());
            }
        });
        cdp.on("Network.responseReceived", (p, s) -> {
            if (sessionId.equals(s)) {
                JsonNode resp = p.path("response");
                responses.add(DevTools.params().put("url", resp.path("url").asText())
                        .put("status", resp.path("status").asInt())
                        .put("remoteIPAddress", resp.path("remoteIPAddress").asText(""))
                        .put("remotePort", resp.path("remotePort").asInt(0))
                        .put("fromDiskCache", resp.path("fromDiskCache").asBoolean(false)));
            }
        });
        cdp.on("Debugger.scriptParsed", (p, s) -> {
            if (sessionId.equals(s)) {
                scripts.add(p);
            }
        });
        cdp.on("Runtime.consoleAPICalled", (p, s) -> {
            if (sessionId.equals(s)) {
                StringBuilder b = new StringBuilder(p.path("type").asText()).append(':');
                for (JsonNode a : p.path("args")) {
                    b.append(' ').append(a.has("value") ? a.get("value").asText() : a.path("description").asText());
                }
                console.add(b.toString());
            }
        });
        if (username != null) {
            cdp.on("Fetch.requestPaused", (p, s) -> {
                if (sessionId.equals(s)) {
                    pausedRequests.incrementAndGet();
                    cdp.sendAsync("Fetch.continueRequest", DevTools.params().put("requestId", p.get("requestId").asText()),
                            sessionId);
                }
            });
            cdp.on("Fetch.authRequired", (p, s) -> {
                if (!sessionId.equals(s)) {
                    return;
                }
                ObjectNode answer = DevTools.params().put("requestId", p.get("requestId").asText());
                ObjectNode response = answer.putObject("authChallengeResponse");
                if ("Proxy".equals(p.path("authChallenge").path("source").asText())) {
                    proxyChallenges.incrementAndGet();
                    response.put("response", "ProvideCredentials").put("username", username).put("password", password);
                } else {
                    response.put("response", "CancelAuth");
                }
                cdp.sendAsync("Fetch.continueWithAuth", answer, sessionId);
            });
        }
        cdp.send("Page.enable", null, sessionId);
        cdp.send("Runtime.enable", null, sessionId);
        cdp.send("Network.enable", null, sessionId);
        if (username != null) {
            ObjectNode fetch = DevTools.params().put("handleAuthRequests", true);
            fetch.putArray("patterns").addObject().put("urlPattern", "*");
            cdp.send("Fetch.enable", fetch, sessionId);
        }
    }

    /**
     * Attaches to a tab some other program opened (e.g. the browser {@code desktop-ingress open} started, which
     * answers its proxy's challenges itself): no credential here.
     */
    public static Page attach(DevTools cdp, String targetId) {
        JsonNode attached = cdp.send("Target.attachToTarget",
                DevTools.params().put("targetId", targetId).put("flatten", true));
        return new Page(cdp, targetId, attached.get("sessionId").asText(), null, null);
    }

    /**
     * Navigates and waits for the load event. Returns the {@code Page.navigate} result: {@code errorText} is set
     * when the navigation failed (e.g. {@code net::ERR_TUNNEL_CONNECTION_FAILED}).
     */
    public JsonNode navigate(String url) {
        CompletableFuture<Void> loaded = new CompletableFuture<>();
        load.set(loaded);
        JsonNode result = cdp.send("Page.navigate", DevTools.params().put("url", url), sessionId);
        if (result.hasNonNull("errorText") && !result.get("errorText").asText().isEmpty()) {
            // A failed navigation shows Chromium's error page; its load event is not what the caller waits for.
            try {
                loaded.get(5, TimeUnit.SECONDS);
            } catch (Exception e) {
                // fine: the failure itself is the answer
            }
            return result;
        }
        try {
            loaded.get(NAVIGATION_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw new AssertionError("no load event within " + NAVIGATION_TIMEOUT + " after navigating to " + url
                    + " (navigate answered " + result + "); console: " + console, e);
        }
        return result;
    }

    /** Reloads (a full page load, as F5) and waits for the load event. */
    public void reload() {
        CompletableFuture<Void> loaded = new CompletableFuture<>();
        load.set(loaded);
        cdp.send("Page.reload", DevTools.params().put("ignoreCache", false), sessionId);
        try {
            loaded.get(NAVIGATION_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw new AssertionError("no load event within " + NAVIGATION_TIMEOUT + " after reload", e);
        }
    }

    /** Evaluates an expression in the page (promises awaited, result by value); page exceptions fail. */
    public JsonNode evaluate(String expression) {
        ObjectNode params = DevTools.params().put("expression", expression).put("awaitPromise", true)
                .put("returnByValue", true);
        JsonNode r = cdp.send("Runtime.evaluate", params, sessionId);
        if (r.has("exceptionDetails")) {
            JsonNode d = r.get("exceptionDetails");
            throw new DevTools.DevToolsException("page exception: " + d.path("exception").path("description").asText(d.toString()));
        }
        return r.path("result").path("value");
    }

    public String evaluateString(String expression) {
        return evaluate(expression).asText();
    }

    private static List<JsonNode> lastOf(List<JsonNode> all, int n) {
        return all.subList(Math.max(0, all.size() - n), all.size());
    }

    /**
     * Polls {@code expression} until it is truthy, small parks between polls, bounded by {@code timeout}. Errors
     * during a poll (the document is being replaced) count as "not yet". Returns the truthy value.
     */
    public JsonNode waitFor(String expression, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        JsonNode last = null;
        RuntimeException lastError = null;
        while (true) {
            try {
                last = evaluate(expression);
                lastError = null;
                if (truthy(last)) {
                    return last;
                }
            } catch (DevTools.DevToolsException e) {
                lastError = e;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out after " + timeout + " waiting for `" + expression + "` (last: "
                        + (lastError != null ? lastError.getMessage() : last) + "); console: " + console
                        + "; requests not finished: " + unfinished.values() + "; loading failures: "
                        + loadingFailures.stream().map(f -> f.path("errorText").asText()).toList()
                        + "; last responses: " + lastOf(List.copyOf(responses), 5));
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
            if (Thread.interrupted()) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting for `" + expression + "`");
            }
        }
    }

    static boolean truthy(JsonNode v) {
        if (v == null || v.isMissingNode() || v.isNull()) {
            return false;
        }
        if (v.isBoolean()) {
            return v.asBoolean();
        }
        if (v.isNumber()) {
            return v.asDouble() != 0;
        }
        if (v.isTextual()) {
            return !v.asText().isEmpty();
        }
        return true;
    }

    /** {@code Page.captureScreenshot} of the viewport, written as a PNG to {@code png}. */
    public void captureScreenshot(java.nio.file.Path png) throws java.io.IOException {
        JsonNode shot = cdp.send("Page.captureScreenshot", DevTools.params().put("format", "png"), sessionId);
        java.nio.file.Files.createDirectories(png.toAbsolutePath().getParent());
        java.nio.file.Files.write(png, java.util.Base64.getDecoder().decode(shot.path("data").asText()));
    }

    /** Starts collecting {@code Debugger.scriptParsed} (scripts with their {@code sourceMapURL}). */
    public void enableDebugger() {
        cdp.send("Debugger.enable", null, sessionId);
    }

    public List<JsonNode> scripts() {
        return scripts;
    }

    /**
     * Every response this tab received: url, status, and the address Chromium actually talked to
     * ({@code remoteIPAddress}/{@code remotePort}: the proxy's, when the request went through the ingress).
     */
    public List<JsonNode> responses() {
        return responses;
    }

    public List<JsonNode> loadingFailures() {
        return loadingFailures;
    }

    public List<String> console() {
        return console;
    }

    /** How many proxy 407 challenges this tab answered with the session's credential. */
    public int proxyChallenges() {
        return proxyChallenges.get();
    }

    public int pausedRequests() {
        return pausedRequests.get();
    }

    public void close() {
        try {
            cdp.send("Target.closeTarget", DevTools.params().put("targetId", targetId));
        } catch (RuntimeException e) {
            // the browser may be closing
        }
    }
}
