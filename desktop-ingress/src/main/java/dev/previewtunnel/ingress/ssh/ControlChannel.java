package dev.previewtunnel.ingress.ssh;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import dev.previewtunnel.json.JsonTrees;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The desktop end of {@code serve --stdio-control}: JSON lines over the gateway's stdin/stdout (docs/operations.md,
 * "The stdio control channel"). The first line is the ready line; then each request line gets one response line
 * with its id. One reader thread, one writer thread (callers, possibly event loops, never block on the pipe); every
 * call is bounded by {@code callTimeout}; lines over 64 KiB end the channel. Once ended, every call fails at once.
 */
final class ControlChannel implements GatewayControl {
    static final int MAX_LINE = 64 * 1024;

    private final String host;
    private final OutputStream out;
    private final Duration callTimeout;
    private final ExecutorService writer;
    private final AtomicLong ids = new AtomicLong();
    private final Map<Long, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();
    private final CompletableFuture<JsonNode> ready = new CompletableFuture<>();
    private final CompletableFuture<String> ended = new CompletableFuture<>();

    ControlChannel(String host, InputStream in, OutputStream out, Duration callTimeout) {
        this.host = host;
        this.out = out;
        this.callTimeout = callTimeout;
        this.writer = Executors.newSingleThreadExecutor(r -> daemon(r, "ssh-control-writer"));
        daemon(() -> readLines(in), "ssh-control-reader").start();
    }

    /** The gateway's ready line (its first line on stdout); fails if the channel ends first. */
    CompletableFuture<JsonNode> ready() {
        return ready;
    }

    /** Completes with the reason in words once the channel has ended (EOF, bad output, or {@link #end}). */
    CompletableFuture<String> ended() {
        return ended;
    }

    boolean open() {
        return !ended.isDone();
    }

    @Override
    public CompletableFuture<String> token(Duration ttl) {
        return call(request("token").put("ttl", ttl.toSeconds() + "s")).thenApply(r -> text(r, "token"));
    }

    @Override
    public CompletableFuture<IssuedGrant> grant(String session, String target, Duration ttl) {
        ObjectNode req = request("grant").put("session", session).put("target", target)
                .put("ttl", ttl.toSeconds() + "s");
        return call(req).thenApply(r -> new IssuedGrant(text(r, "grant"), text(r, "grantId"), instant(r)));
    }

    @Override
    public CompletableFuture<List<RemotePort>> ports() {
        return call(request("ports")).thenApply(ControlChannel::ports);
    }

    /** Answered by a live gateway at once: the link's liveness probe. */
    CompletableFuture<Void> ping(Duration timeout) {
        return call(request("ping"), timeout).thenAccept(r -> { });
    }

    /** Ends the channel: stdin closed (the gateway drains and exits), pending calls failed with {@code why}. */
    void end(String why) {
        if (ended.complete(why)) {
            SshLinkException down = new SshLinkException("the SSH link to " + host + " is down (" + why + ")");
            ready.completeExceptionally(down);
            pending.values().forEach(f -> f.completeExceptionally(down));
            pending.clear();
            writer.execute(() -> {
                try {
                    out.close();
                } catch (IOException ignored) {
                    // the process is gone already
                }
            });
            writer.shutdown();
        }
    }

    private ObjectNode request(String op) {
        return JsonTrees.object().put("id", ids.incrementAndGet()).put("op", op);
    }

    private CompletableFuture<JsonNode> call(ObjectNode req) {
        return call(req, callTimeout);
    }

    private CompletableFuture<JsonNode> call(ObjectNode req, Duration timeout) {
        long id = req.get("id").asLong();
        CompletableFuture<JsonNode> f = new CompletableFuture<>();
        if (!open()) {
            return CompletableFuture.failedFuture(new SshLinkException("the SSH link to " + host + " is down ("
                    + ended.getNow("") + ")"));
        }
        pending.put(id, f);
        byte[] line = (JsonTrees.write(req) + "\n").getBytes(StandardCharsets.UTF_8);
        try {
            writer.execute(() -> write(line));
        } catch (RuntimeException rejected) { // ended meanwhile
            pending.remove(id);
            return CompletableFuture.failedFuture(new SshLinkException("the SSH link to " + host + " is down"));
        }
        String op = req.get("op").asText();
        return f.orTimeout(timeout.toMillis(), TimeUnit.MILLISECONDS).handle((r, e) -> {
            pending.remove(id);
            if (e == null) {
                return r;
            }
            Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
            if (cause instanceof TimeoutException) {
                throw new SshLinkException("the gateway on " + host + " did not answer '" + op + "' within "
                        + (timeout.toMillis() < 1000 ? timeout.toMillis() + " ms" : timeout.toSeconds() + " s"));
            }
            throw cause instanceof SshLinkException s ? s : new SshLinkException(String.valueOf(cause.getMessage()));
        });
    }

    private void write(byte[] line) {
        try {
            out.write(line);
            out.flush();
        } catch (IOException e) {
            end("cannot write to the gateway: " + e.getMessage());
        }
    }

    private void readLines(InputStream in) {
        String why = "the gateway's channel ended";
        try (in) {
            ByteArrayOutputStream line = new ByteArrayOutputStream();
            for (int b; (b = in.read()) >= 0; ) {
                if (b != '\n') {
                    if (line.size() >= MAX_LINE) {
                        why = "the gateway sent a line over " + MAX_LINE / 1024 + " KiB";
                        break;
                    }
                    line.write(b);
                    continue;
                }
                String bad = onLine(line.toString(StandardCharsets.UTF_8));
                line.reset();
                if (bad != null) {
                    why = bad;
                    break;
                }
            }
        } catch (IOException e) {
            why = "the gateway's channel failed: " + e.getMessage();
        }
        end(why);
    }

    /** Handles one line; returns why the channel must end, or null. */
    private String onLine(String text) {
        JsonNode node;
        try {
            node = JsonTrees.parse(text);
        } catch (JsonProcessingException e) {
            String shown = text.replaceAll("\\p{Cntrl}", ""); // shorter than text when it held control characters
            return ready.isDone() ? "the gateway sent a line that is not JSON" : "the gateway did not start: "
                    + shown.substring(0, Math.min(shown.length(), 200));
        }
        if (!ready.isDone()) {
            if (node == null || !"ready".equals(node.path("event").asText())) {
                return "the gateway's first line was not its ready line";
            }
            ready.complete(node);
            return null;
        }
        CompletableFuture<JsonNode> f = node == null ? null : pending.get(node.path("id").asLong(-1));
        if (f == null) {
            return null; // a late answer to a call that timed out, or an unsolicited line: nothing waits for it
        }
        if (node.hasNonNull("error")) {
            f.completeExceptionally(new SshLinkException("the gateway on " + host + " refused: "
                    + node.path("error").asText() + ": " + node.path("message").asText()));
        } else {
            f.complete(node);
        }
        return null;
    }

    private String text(JsonNode r, String field) {
        JsonNode v = r.get(field);
        if (v == null || !v.isTextual()) {
            throw new SshLinkException("the gateway on " + host + " answered without '" + field + "'");
        }
        return v.asText();
    }

    private Instant instant(JsonNode r) {
        try {
            return Instant.parse(text(r, "expiresAt"));
        } catch (DateTimeParseException e) {
            throw new SshLinkException("the gateway on " + host + " answered an expiresAt that is not an instant");
        }
    }

    private static List<RemotePort> ports(JsonNode r) {
        List<RemotePort> ports = new ArrayList<>();
        for (JsonNode p : r.path("ports")) {
            List<String> addresses = new ArrayList<>();
            p.path("addresses").forEach(a -> addresses.add(a.asText()));
            ports.add(new RemotePort(p.path("port").asInt(), addresses.isEmpty() ? null : addresses.get(0), addresses));
        }
        return ports;
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }
}
