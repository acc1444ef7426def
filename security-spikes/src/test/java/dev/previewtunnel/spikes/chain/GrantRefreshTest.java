package dev.previewtunnel.spikes.chain;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.ingress.refresh.CommandGrantRefresher;
import dev.previewtunnel.ingress.refresh.UrlGrantRefresher;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.stack.TunnelStack;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The grant refresh hook when it does not simply work: a command that fails, a command or URL that answers a
 * grant for another target or another expired grant, and a URL that answers an error. Each is asked exactly
 * once per refusal (counted by the hook itself), and the browser then gets the expired (401) or revoked (410)
 * page; nothing the hook answered wrongly is attached or used.
 */
class GrantRefreshTest {
    static final ObjectMapper JSON = new ObjectMapper();
    SampleApp app;
    SampleApp otherApp;
    TunnelStack stack;
    /** JUnit deletes it after each test (a directory of its own made here was left in /tmp by every run). */
    @TempDir
    Path dir;
    ExecutorService hookThreads;

    @BeforeEach
    void start() throws Exception {
        app = SampleApp.start("127.0.0.1", 0);
        otherApp = SampleApp.start("127.0.0.1", 0);
        stack = TunnelStack.start(1);
        hookThreads = Executors.newSingleThreadExecutor();
    }

    @AfterEach
    void stop() {
        hookThreads.shutdownNow();
        stack.close();
        app.close();
        otherApp.close();
    }

    /** A correctly signed grant for this session that expired ten minutes ago (beyond the verifier's skew). */
    private String expiredGrant(int port) throws Exception {
        return new GrantIssuer(KeyDirectory.open(stack.keysDir()).signingKey(),
                Clock.fixed(Instant.now().minus(Duration.ofMinutes(20)), ZoneOffset.UTC))
                .issueGrant(GrantSpec.tcp(TunnelStack.ENVIRONMENT, stack.session().id(), "localhost", port),
                        Duration.ofMinutes(5));
    }

    /** A hook script: appends "$PTUN_REASON $PTUN_TARGET" to the count file, then runs {@code rest}. */
    private Path hook(String rest) throws Exception {
        Path script = dir.resolve("hook-" + System.nanoTime() + ".sh");
        Files.writeString(script, "#!/bin/sh\necho \"$PTUN_REASON $PTUN_TARGET\" >> \"$1\"\n" + rest + "\n");
        assertTrue(script.toFile().setExecutable(true));
        return script;
    }

    private void useCommand(Path script, Path calls) {
        stack.ingress().grantRefresher(new CommandGrantRefresher(List.of(script.toString(), calls.toString()),
                Duration.ofSeconds(10), hookThreads));
    }

    private static List<String> lines(Path file) throws Exception {
        return Files.exists(file) ? Files.readAllLines(file) : List.of();
    }

    private RawAnswer navigate(int port) throws Exception {
        return RawAnswer.parse(ProxyClients.rawExchange(stack.proxy(), stack.session(), "GET http://localhost:" + port
                + "/hello HTTP/1.1\r\nHost: localhost:" + port + "\r\nAccept: text/html\r\nConnection: close"));
    }

    private void assertExpiredPage(RawAnswer r, int port) {
        assertEquals(401, r.status(), r.toString());
        assertEquals("grant_expired", r.header("ptun-error"));
        assertTrue(r.body().contains("The grant for localhost:" + port + " has expired"), r.body());
    }

    @Test
    void requestsRefreshingTheSameGrantTogetherAllGetThrough() throws Exception {
        String expired = expiredGrant(app.port());
        stack.session().authorities().add(expired);
        String fresh = stack.issueGrant("localhost", app.port(), Duration.ofMinutes(5));
        Path answer = dir.resolve("answer");
        Files.writeString(answer, fresh + "\n");
        Path calls = dir.resolve("calls");
        // Each hook answers only once both requests' hooks have started (a bounded wait of at most 10 s), so the
        // second request's hook always answers after the first request has already put the fresh grant in the
        // old one's place: the second must use it, not call the refresh a failure.
        Path script = hook("i=0; while [ \"$(wc -l < \"$1\")\" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.05; "
                + "i=$((i+1)); done\ncat '" + answer + "'");
        ExecutorService twoHooks = Executors.newFixedThreadPool(2);
        ExecutorService browsers = Executors.newFixedThreadPool(2);
        try {
            stack.ingress().grantRefresher(new CommandGrantRefresher(List.of(script.toString(), calls.toString()),
                    Duration.ofSeconds(20), twoHooks));
            CompletableFuture<RawAnswer> a = CompletableFuture.supplyAsync(() -> navigateUnchecked(app.port()), browsers);
            CompletableFuture<RawAnswer> b = CompletableFuture.supplyAsync(() -> navigateUnchecked(app.port()), browsers);
            RawAnswer first = a.get(60, TimeUnit.SECONDS);
            RawAnswer second = b.get(60, TimeUnit.SECONDS);
            assertEquals(200, first.status(), first.toString());
            assertEquals(200, second.status(), second.toString());
            assertEquals(2, lines(calls).size(), "each refused request asked the hook once");
            assertTrue(stack.session().authorities().hasGrant(UnverifiedGrantView.decode(fresh).jti()));
            assertFalse(stack.session().authorities().hasGrant(UnverifiedGrantView.decode(expired).jti()));
            assertEquals(2, app.requestsServed());
        } finally {
            twoHooks.shutdownNow();
            browsers.shutdownNow();
        }
    }

    private RawAnswer navigateUnchecked(int port) {
        try {
            return navigate(port);
        } catch (Exception e) {
            throw new CompletionException(e);
        }
    }

    @Test
    void aFailingCommandIsCalledOnceAndTheExpiredPageFollows() throws Exception {
        String expired = expiredGrant(app.port());
        stack.session().authorities().add(expired);
        Path calls = dir.resolve("calls");
        useCommand(hook("echo 'some diagnostics' >&2\nexit 3"), calls);

        assertExpiredPage(navigate(app.port()), app.port());
        assertEquals(List.of("grant_expired localhost:" + app.port()), lines(calls), "exactly one hook call");
        // Once per refusal, not once per session and not in a loop: the next request asks again, once.
        assertExpiredPage(navigate(app.port()), app.port());
        assertEquals(2, lines(calls).size());
        // The refused grant stays attached (a later refresh can still replace it); the target was never reached.
        assertTrue(stack.session().authorities().hasGrant(UnverifiedGrantView.decode(expired).jti()));
        assertEquals(0, app.requestsServed());
    }

    @Test
    void aGrantForAnotherTargetIsRefusedAndNeitherAttachedNorUsed() throws Exception {
        stack.session().authorities().add(expiredGrant(app.port()));
        String wrong = stack.issueGrant("localhost", otherApp.port(), Duration.ofMinutes(5));
        Path answer = dir.resolve("answer");
        Files.writeString(answer, wrong + "\n");
        Path calls = dir.resolve("calls");
        useCommand(hook("cat '" + answer + "'"), calls);

        assertExpiredPage(navigate(app.port()), app.port());
        assertEquals(1, lines(calls).size());
        String wrongId = UnverifiedGrantView.decode(wrong).jti();
        assertFalse(stack.session().authorities().hasGrant(wrongId), "the wrong grant is not kept");
        assertTrue(stack.session().authorities().route(new Authority("localhost", otherApp.port())).isEmpty());
        assertEquals(0, otherApp.acceptedConnections(), "the wrong grant's target was never dialed");
        assertEquals(0, app.requestsServed());
    }

    @Test
    void aRefreshedGrantThatIsRefusedAgainIsNotRefreshedAgain() throws Exception {
        stack.session().authorities().add(expiredGrant(app.port()));
        Path answer = dir.resolve("answer");
        Files.writeString(answer, expiredGrant(app.port()) + "\n"); // right target, but expired too
        Path calls = dir.resolve("calls");
        useCommand(hook("cat '" + answer + "'"), calls);

        assertExpiredPage(navigate(app.port()), app.port());
        assertEquals(1, lines(calls).size(), "one refresh per refusal, never a loop");
        assertEquals(0, app.requestsServed());
    }

    @Test
    void aGrantDetachedWhileTheHookRunsIsNotBroughtBackByItsAnswer() throws Exception {
        String expired = expiredGrant(app.port());
        String expiredId = UnverifiedGrantView.decode(expired).jti();
        stack.session().authorities().add(expired);
        String fresh = stack.issueGrant("localhost", app.port(), Duration.ofMinutes(5));
        CompletableFuture<Void> asked = new CompletableFuture<>();
        CompletableFuture<String> answer = new CompletableFuture<>();
        stack.ingress().grantRefresher((session, target, grantId, why) -> {
            asked.complete(null);
            return answer;
        });
        CompletableFuture<RawAnswer> response = CompletableFuture.supplyAsync(() -> {
            try {
                return navigate(app.port());
            } catch (Exception e) {
                throw new CompletionException(e);
            }
        }, hookThreads);
        asked.get(15, TimeUnit.SECONDS);
        assertEquals(0, stack.session().detachGrant(expiredId)); // the user detaches while the hook is out
        answer.complete(fresh);
        assertExpiredPage(response.get(15, TimeUnit.SECONDS), app.port());
        assertFalse(stack.session().authorities().hasGrant(UnverifiedGrantView.decode(fresh).jti()),
                "the detach stands");
        assertEquals(0, app.requestsServed());
    }

    @Test
    void aRevokedGrantWhoseRefreshFailsGetsTheDistinctRevokedPage() throws Exception {
        String grant = stack.grant("localhost", app.port());
        stack.gateway().revocations().revokeGrant(UnverifiedGrantView.decode(grant).jti());
        Path calls = dir.resolve("calls");
        useCommand(hook("exit 1"), calls);

        RawAnswer r = navigate(app.port());
        assertEquals(410, r.status(), r.toString());
        assertEquals("grant_revoked", r.header("ptun-error"));
        assertTrue(r.body().contains("The grant for localhost:" + app.port() + " was revoked"), r.body());
        assertEquals(List.of("grant_revoked localhost:" + app.port()), lines(calls));
        assertEquals(0, app.requestsServed());
    }

    /** A local grant authority for the URL refresher: records each POST, answers with {@code status} and body. */
    private static final class GrantAuthority implements AutoCloseable {
        final HttpServer server;
        final ConcurrentLinkedQueue<String> bodies = new ConcurrentLinkedQueue<>();
        final ConcurrentLinkedQueue<String> authorizations = new ConcurrentLinkedQueue<>();
        final AtomicInteger calls = new AtomicInteger();

        GrantAuthority(int status, String body) throws Exception {
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
            server.createContext("/refresh", exchange -> {
                calls.incrementAndGet();
                bodies.add(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
                authorizations.add(String.valueOf(exchange.getRequestHeaders().getFirst("Authorization")));
                byte[] out = body.getBytes(StandardCharsets.UTF_8);
                exchange.sendResponseHeaders(status, out.length);
                exchange.getResponseBody().write(out);
                exchange.close();
            });
            server.start();
        }

        URI url() {
            return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/refresh");
        }

        @Override
        public void close() {
            server.stop(0);
        }
    }

    @Test
    void theUrlRefresherPostsTheRequestAndItsGrantIsUsed() throws Exception {
        String expired = expiredGrant(app.port());
        stack.session().authorities().add(expired);
        String fresh = stack.issueGrant("localhost", app.port(), Duration.ofMinutes(5));
        try (GrantAuthority authority = new GrantAuthority(200, fresh + "\n")) {
            stack.ingress().grantRefresher(new UrlGrantRefresher(authority.url(), "hook-token", Duration.ofSeconds(5)));
            RawAnswer r = navigate(app.port());
            assertEquals(200, r.status(), r.toString());
            assertEquals(SampleApp.HELLO_BODY, r.body());
            assertEquals(1, authority.calls.get());
            JsonNode asked = JSON.readTree(authority.bodies.peek());
            assertEquals(stack.session().id(), asked.get("session").asText());
            assertEquals("localhost:" + app.port(), asked.get("target").asText());
            assertEquals(UnverifiedGrantView.decode(expired).jti(), asked.get("grantId").asText());
            assertEquals("grant_expired", asked.get("reason").asText());
            assertEquals("Bearer hook-token", authority.authorizations.peek());
            assertTrue(stack.session().authorities().hasGrant(UnverifiedGrantView.decode(fresh).jti()));
            assertFalse(stack.session().authorities().hasGrant(UnverifiedGrantView.decode(expired).jti()));
        }
    }

    @Test
    void aUrlRefresherErrorIsCalledOnceAndTheExpiredPageFollows() throws Exception {
        stack.session().authorities().add(expiredGrant(app.port()));
        try (GrantAuthority authority = new GrantAuthority(500, "no grant for you\n")) {
            UrlGrantRefresher refresher = new UrlGrantRefresher(authority.url(), null, Duration.ofSeconds(5));
            // Directly: the future fails and says why, without echoing what the server sent.
            CompletionException direct = assertThrows(CompletionException.class, () -> refresher.refresh("s",
                    "localhost:1", "id", TunnelError.GRANT_EXPIRED).join());
            assertTrue(direct.getCause().getMessage().contains("answered 500"), direct.getCause().getMessage());
            assertEquals(1, authority.calls.get());

            stack.ingress().grantRefresher(refresher);
            assertExpiredPage(navigate(app.port()), app.port());
            assertEquals(2, authority.calls.get(), "one more call for the one refused request");
            assertEquals("null", List.copyOf(authority.authorizations).get(1), "no bearer configured, none sent");
        }
        assertEquals(0, app.requestsServed());
    }

    @Test
    void aUrlThatCannotBeReachedFailsLikeAFailingCommand() throws Exception {
        stack.session().authorities().add(expiredGrant(app.port()));
        URI closed;
        try (GrantAuthority gone = new GrantAuthority(200, "unused")) {
            closed = gone.url();
        }
        stack.ingress().grantRefresher(new UrlGrantRefresher(closed, null, Duration.ofSeconds(5)));
        assertExpiredPage(navigate(app.port()), app.port());
        assertEquals(0, app.requestsServed());
    }
}
