package dev.previewtunnel.ingress.ssh;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The desktop end of the stdio control channel against a scripted gateway on pipes (the wire format only). */
@Timeout(30)
class ControlChannelTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String READY = "{\"event\":\"ready\",\"listen\":\"unix:/run/gw.sock\",\"env\":\"e\"}";

    private final PipedOutputStream gatewayOut = new PipedOutputStream();
    private final PipedInputStream desktopIn = pipe(gatewayOut);
    private final PipedOutputStream desktopOut = new PipedOutputStream();
    private final PipedInputStream gatewayIn = pipe(desktopOut);
    private final BlockingQueue<JsonNode> requests = new LinkedBlockingQueue<>();
    private final CompletableFuture<Void> gatewaySawEof = new CompletableFuture<>();
    private ControlChannel channel;

    @AfterEach
    void end() {
        if (channel != null) {
            channel.end("test over");
        }
    }

    @Test
    void everyOpIsAnsweredByItsId() throws Exception {
        start(Duration.ofSeconds(10), req -> switch (req.get("op").asText()) {
            case "token" -> "{\"id\":" + req.get("id") + ",\"token\":\"a.b.c\",\"expiresAt\":\"2026-12-02T18:00:00Z\"}";
            case "grant" -> "{\"id\":" + req.get("id") + ",\"grant\":\"g.h.i\",\"grantId\":\"j1\","
                    + "\"expiresAt\":\"2026-12-02T06:10:00Z\",\"unknown\":1}";
            case "ports" -> "{\"id\":" + req.get("id") + ",\"ports\":[{\"port\":5173,\"addresses\":[\"127.0.0.1\","
                    + "\"::1\"]},{\"port\":8080,\"addresses\":[\"0.0.0.0\"]}]}";
            default -> "{\"id\":" + req.get("id") + ",\"pong\":true}";
        });
        assertEquals("ready", channel.ready().get(5, TimeUnit.SECONDS).get("event").asText());

        assertEquals("a.b.c", channel.token(Duration.ofHours(12)).get(5, TimeUnit.SECONDS));
        JsonNode tokenReq = requests.take();
        assertEquals("token", tokenReq.get("op").asText());
        assertEquals("43200s", tokenReq.get("ttl").asText());

        IssuedGrant grant = channel.grant("S", "localhost:5173", Duration.ofMinutes(10)).get(5, TimeUnit.SECONDS);
        assertEquals(new IssuedGrant("g.h.i", "j1", Instant.parse("2026-12-02T06:10:00Z")), grant);
        JsonNode grantReq = requests.take();
        assertEquals("S", grantReq.get("session").asText());
        assertEquals("localhost:5173", grantReq.get("target").asText());
        assertEquals("600s", grantReq.get("ttl").asText());
        assertNotEqualIds(tokenReq, grantReq);

        assertEquals(List.of(new RemotePort(5173, "127.0.0.1", List.of("127.0.0.1", "::1")),
                        new RemotePort(8080, "0.0.0.0")),
                channel.ports().get(5, TimeUnit.SECONDS));
        channel.ping(Duration.ofSeconds(5)).get(5, TimeUnit.SECONDS);
        assertTrue(channel.open());
    }

    @Test
    void anErrorResponseFailsTheCallInWordsAndTheChannelGoesOn() throws Exception {
        start(Duration.ofSeconds(10), req -> req.get("op").asText().equals("grant")
                ? "{\"id\":" + req.get("id") + ",\"error\":\"invalid_target\",\"message\":\"not a loopback target\"}"
                : "{\"id\":" + req.get("id") + ",\"pong\":true}");
        channel.ready().get(5, TimeUnit.SECONDS);
        ExecutionException e = assertThrows(ExecutionException.class,
                () -> channel.grant("S", "example.com:80", Duration.ofMinutes(1)).get(5, TimeUnit.SECONDS));
        assertInstanceOf(SshLinkException.class, e.getCause());
        assertEquals("the gateway on devbox refused: invalid_target: not a loopback target", e.getCause().getMessage());
        channel.ping(Duration.ofSeconds(5)).get(5, TimeUnit.SECONDS);
    }

    @Test
    void anUnansweredCallFailsAtItsTimeLimit() throws Exception {
        start(Duration.ofMillis(300), req -> null);
        channel.ready().get(5, TimeUnit.SECONDS);
        ExecutionException e = assertThrows(ExecutionException.class,
                () -> channel.ports().get(5, TimeUnit.SECONDS));
        assertEquals("the gateway on devbox did not answer 'ports' within 300 ms", e.getCause().getMessage());
        assertTrue(channel.open(), "a slow answer does not end the channel (the link's ping decides)");
    }

    @Test
    void aLineOverTheLimitEndsTheChannelAndLaterCallsFailAtOnce() throws Exception {
        start(Duration.ofSeconds(10), req -> "{\"id\":" + req.get("id") + ",\"token\":\""
                + "x".repeat(ControlChannel.MAX_LINE) + "\"}");
        channel.ready().get(5, TimeUnit.SECONDS);
        CompletableFuture<String> call = channel.token(Duration.ofMinutes(1));
        ExecutionException e = assertThrows(ExecutionException.class, () -> call.get(5, TimeUnit.SECONDS));
        assertTrue(e.getCause().getMessage().contains("a line over 64 KiB"), e.getCause().getMessage());
        assertEquals("the gateway sent a line over 64 KiB", channel.ended().get(5, TimeUnit.SECONDS));
        assertFalse(channel.open());
        assertTrue(channel.ports().isCompletedExceptionally(), "fails at once, never hangs");
        gatewaySawEof.get(5, TimeUnit.SECONDS);
    }

    @Test
    void aGatewayThatEndsBeforeItsReadyLineFailsReady() throws Exception {
        channel = new ControlChannel("devbox", desktopIn, desktopOut, Duration.ofSeconds(5));
        gatewayOut.write("Error: Unknown option: '--stdio-control'\n".getBytes(StandardCharsets.UTF_8));
        gatewayOut.close();
        ExecutionException e = assertThrows(ExecutionException.class, () -> channel.ready().get(5, TimeUnit.SECONDS));
        String line = e.getCause().getMessage();
        assertTrue(line.contains("did not start: Error: Unknown option"), line);
    }

    /**
     * A first line whose control characters take it under 200 characters once removed: shown without them, and
     * cut at the shorter length (it was cut at the line's own length, past the end); a long one at 200.
     */
    @Test
    void aFirstLineWithControlCharactersIsShownWithoutThem() throws Exception {
        channel = new ControlChannel("devbox", desktopIn, desktopOut, Duration.ofSeconds(5));
        gatewayOut.write(("\u0007".repeat(100) + "y".repeat(150) + "\n").getBytes(StandardCharsets.UTF_8));
        gatewayOut.close();
        ExecutionException e = assertThrows(ExecutionException.class, () -> channel.ready().get(5, TimeUnit.SECONDS));
        assertEquals("the SSH link to devbox is down (the gateway did not start: " + "y".repeat(150) + ")",
                e.getCause().getMessage());
    }

    @Test
    void endClosesTheGatewaysStdinAndFailsPendingCalls() throws Exception {
        start(Duration.ofSeconds(10), req -> null);
        channel.ready().get(5, TimeUnit.SECONDS);
        CompletableFuture<String> pending = channel.token(Duration.ofMinutes(1));
        requests.take();
        channel.end("closed");
        ExecutionException e = assertThrows(ExecutionException.class, () -> pending.get(5, TimeUnit.SECONDS));
        assertEquals("the SSH link to devbox is down (closed)", e.getCause().getMessage());
        gatewaySawEof.get(5, TimeUnit.SECONDS);
    }

    private void start(Duration timeout, Function<JsonNode, String> answer) throws IOException {
        channel = new ControlChannel("devbox", desktopIn, desktopOut, timeout);
        gatewayOut.write((READY + "\n").getBytes(StandardCharsets.UTF_8));
        gatewayOut.flush();
        Thread gateway = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(gatewayIn, StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                    JsonNode req = JSON.readTree(line);
                    requests.add(req);
                    String response = answer.apply(req);
                    if (response != null) {
                        gatewayOut.write((response + "\n").getBytes(StandardCharsets.UTF_8));
                        gatewayOut.flush();
                    }
                }
                gatewaySawEof.complete(null);
            } catch (IOException e) {
                gatewaySawEof.complete(null); // the desktop side closed its end
            }
        }, "fake-gateway");
        gateway.setDaemon(true);
        gateway.start();
    }

    private static void assertNotEqualIds(JsonNode a, JsonNode b) {
        assertFalse(a.get("id").equals(b.get("id")), "every request has its own id");
        assertNull(a.get("session"));
    }

    private static PipedInputStream pipe(PipedOutputStream out) {
        try {
            return new PipedInputStream(out, 256 * 1024);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
