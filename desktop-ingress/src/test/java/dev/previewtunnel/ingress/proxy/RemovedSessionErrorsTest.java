package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.ingress.Ingress;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.session.BrowserSession;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A session closed and then created again under the same id starts with no "last errors" of the old one. */
class RemovedSessionErrorsTest {
    @Test
    void removingASessionForgetsItsLastErrors() throws Exception {
        int closed;
        try (ServerSocket s = new ServerSocket(0)) {
            closed = s.getLocalPort();
        }
        Ingress ingress = Ingress.start(IngressConfig.defaults(new InetSocketAddress("127.0.0.1", 0),
                URI.create("ws://127.0.0.1:" + closed + "/tunnel")), () -> "unused", null);
        try {
            BrowserSession old = ingress.sessions().add(BrowserSession.create("s1"));
            RawProxyExchange refused = get(ingress, "localhost:7777", old);
            assertEquals("not_granted", refused.header("ptun-error"), refused.toString());
            assertTrue(get(ingress, "preview.localhost", old).bodyText().contains("localhost:7777"),
                    "the refusal is among the old session's last errors");

            ingress.removeSession("s1");
            BrowserSession again = ingress.sessions().add(BrowserSession.create("s1"));
            String page = get(ingress, "preview.localhost", again).bodyText();
            assertTrue(page.contains("<p id=\"errors\">None.</p>"), page);
        } finally {
            ingress.close(Duration.ofMillis(100));
        }
    }

    private static RawProxyExchange get(Ingress ingress, String authority, BrowserSession s) throws Exception {
        return RawProxyExchange.send(ingress.proxyAddress(), "GET http://" + authority + "/ HTTP/1.1\r\nHost: "
                + authority + "\r\nAccept: text/html\r\nProxy-Authorization: "
                + RawProxyExchange.basic(s.username(), s.password()));
    }
}
