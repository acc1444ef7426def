package dev.previewtunnel.ingress.hostile;

import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.ingress.BrowserConnectionLimits;
import dev.previewtunnel.ingress.Ingress;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.testing.Await;
import dev.previewtunnel.testing.RawHttp;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16, item 5, ingress side, through a real gateway to the sample app. Unauthenticated browser connections are
 * capped (here 100, by the setting) below the total, the oldest is closed when a new one comes over the cap, and
 * an idle one is cut at the unauthenticated timeout (here 3 s): a thousand idle sockets from a local process leave
 * an authenticated request unaffected. A request body that drips (one byte every 300 ms) is cut at the body idle
 * timeout (here 2 s) with a 408 page, and its stream to the target is reset.
 */
class BrowserConnectionBudgetTest {
    private static final String ENV = "e-budget";
    private static final int UNAUTHENTICATED = 100;
    private static final int IDLE = 1000;
    private static final Duration UNAUTHENTICATED_TIMEOUT = Duration.ofSeconds(3);
    private static final Duration BODY_IDLE = Duration.ofSeconds(2);

    private GatewayServer gateway;
    private SampleApp app;
    private Ingress ingress;
    private String proxyAuthorization;

    @BeforeEach
    void start(@TempDir Path dir) throws Exception {
        KeyDirectory keys = KeyDirectory.init(dir.resolve("keys"));
        GrantIssuer issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        gateway = GatewayServer.start(GatewayConfig.defaults(ENV, new InetSocketAddress("127.0.0.1", 0)),
                keys.verificationKeys(), null, new SimpleMeterRegistry());
        app = SampleApp.start("127.0.0.1", 0);
        String token = issuer.issueConnectionToken(ENV, Duration.ofHours(1));
        IngressConfig config = IngressConfig.defaults(new InetSocketAddress("127.0.0.1", 0),
                URI.create(gateway.url(false))).withBrowserLimits(new BrowserConnectionLimits(2000, UNAUTHENTICATED,
                UNAUTHENTICATED_TIMEOUT, BODY_IDLE)).withIoThreads(2); // two loops: ConnectionBudget's race
        ingress = Ingress.start(config, () -> token, null);
        BrowserSession session = ingress.sessions().add(BrowserSession.create("s1"));
        session.authorities().add(issuer.issueGrant(GrantSpec.tcp(ENV, "s1", "localhost", app.port()),
                Duration.ofMinutes(10)));
        proxyAuthorization = "Basic " + Base64.getEncoder().encodeToString(
                (session.username() + ":" + session.password()).getBytes(StandardCharsets.UTF_8));
        ingress.firstConnection().await(10, TimeUnit.SECONDS);
    }

    @AfterEach
    void stop() {
        if (ingress != null) {
            ingress.close();
        }
        if (app != null) {
            app.close();
        }
        if (gateway != null) {
            gateway.close();
        }
    }

    private RawHttp.Timed hello() throws Exception {
        return RawHttp.request(ingress.proxyAddress(), "GET http://localhost:" + app.port() + "/hello HTTP/1.1\r\n"
                + "Host: localhost:" + app.port() + "\r\nProxy-Authorization: " + proxyAuthorization,
                Duration.ofSeconds(5));
    }

    @Test
    void aThousandIdleSocketsDoNotStopAnAuthenticatedRequest() throws Exception {
        assertEquals(200, hello().status(), "warm-up request");
        InetSocketAddress proxy = ingress.proxyAddress();
        List<Socket> idle = new ArrayList<>();
        try {
            long since = System.nanoTime();
            for (int i = 0; i < IDLE; i++) {
                idle.add(new Socket(proxy.getAddress(), proxy.getPort()));
            }
            RawHttp.Timed honest = hello();
            // Beyond the unauthenticated cap the oldest were closed as newer ones came; the rest are cut at the
            // unauthenticated timeout (3 s, the request-head timeout being 30 s).
            int closedEarly = 0;
            for (Socket s : idle) {
                if (RawHttp.millisUntilClosed(s, since, Duration.ofMillis(UNAUTHENTICATED_TIMEOUT.toMillis() / 2))
                        >= 0) {
                    closedEarly++;
                }
            }
            long lastClosed = 0;
            int closed = 0;
            for (Socket s : idle) {
                long at = RawHttp.millisUntilClosed(s, since, UNAUTHENTICATED_TIMEOUT.plusSeconds(4));
                if (at >= 0) {
                    closed++;
                    lastClosed = Math.max(lastClosed, at);
                }
            }
            System.out.printf("{\"test\":\"ingress_idle_sockets\",\"idle\":%d,\"unauthenticatedCap\":%d,"
                    + "\"honestStatus\":%d,\"honestMs\":%d,\"closedWithinHalfTheTimeout\":%d,\"closedInAll\":%d,"
                    + "\"lastClosedMs\":%d}%n", IDLE, UNAUTHENTICATED, honest.status(), honest.millis(), closedEarly,
                    closed, lastClosed);
            assertEquals(200, honest.status(), "an authenticated request is served among 1000 idle sockets");
            assertTrue(honest.millis() < 2000, "it took " + honest.millis() + " ms");
            assertTrue(closedEarly >= IDLE - UNAUTHENTICATED, "over the cap, the oldest idle sockets are closed "
                    + "at once: " + closedEarly + " of " + IDLE);
            assertEquals(IDLE, closed, "every idle socket is cut by the unauthenticated timeout");
            Await.until("no unauthenticated connection left", Duration.ofSeconds(5),
                    () -> ingress.browserBudget().pending() == 0);
        } finally {
            for (Socket s : idle) {
                s.close();
            }
        }
    }

    @Test
    void aDrippingRequestBodyIsCutAtTheBodyIdleTimeout() throws Exception {
        assertEquals(200, hello().status(), "warm-up request");
        try (Socket browser = new Socket(ingress.proxyAddress().getAddress(), ingress.proxyAddress().getPort())) {
            browser.setSoTimeout(200);
            OutputStream out = browser.getOutputStream();
            InputStream in = browser.getInputStream();
            out.write(("POST http://localhost:" + app.port() + "/upload HTTP/1.1\r\nHost: localhost:" + app.port()
                    + "\r\nProxy-Authorization: " + proxyAuthorization + "\r\nContent-Length: 1000\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            long start = System.nanoTime();
            long bound = start + TimeUnit.SECONDS.toNanos(BODY_IDLE.toSeconds() + 6);
            StringBuilder answer = new StringBuilder();
            int dripped = 0;
            boolean closed = false;
            // One byte every 300 ms (the pace of the drip, not a wait for a condition), reading what comes back.
            while (!closed && System.nanoTime() < bound) {
                try {
                    out.write('x');
                    out.flush();
                    dripped++;
                } catch (java.io.IOException e) {
                    // the proxy closed: read what it answered
                }
                long readUntil = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
                while (System.nanoTime() < readUntil) {
                    int b;
                    try {
                        b = in.read();
                    } catch (SocketTimeoutException e) {
                        continue;
                    } catch (java.io.IOException e) {
                        b = -1;
                    }
                    if (b < 0) {
                        closed = true;
                        break;
                    }
                    answer.append((char) b);
                }
                LockSupport.parkNanos(1_000_000);
            }
            long cutMs = (System.nanoTime() - start) / 1_000_000;
            System.out.printf("{\"test\":\"dripping_body\",\"bodyIdleTimeoutMs\":%d,\"cutMs\":%d,\"dripped\":%d,"
                    + "\"closed\":%b,\"status\":\"%s\"}%n", BODY_IDLE.toMillis(), cutMs, dripped, closed,
                    answer.length() >= 12 ? answer.substring(9, 12) : "none");
            assertTrue(closed, "the dripping request was not cut within " + (BODY_IDLE.toSeconds() + 6) + " s");
            assertTrue(answer.toString().startsWith("HTTP/1.1 408"), answer.toString());
            assertTrue(answer.toString().contains("request_body_timeout"), answer.toString());
            assertTrue(cutMs >= BODY_IDLE.toMillis() - 200, "cut after " + cutMs + " ms");
        }
        Await.until("the stream to the target is reset", Duration.ofSeconds(5),
                () -> gateway.liveStreams().size() == 0);
    }
}
