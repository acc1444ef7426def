package dev.previewtunnel.ingress.hostile;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.ingress.Ingress;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.mux.audit.AuditLog;
import dev.previewtunnel.mux.wire.MuxProtocol;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16, item 3 in the other program: any local process can make the ingress refuse requests at will (no proxy
 * credential: 407). The audit log gets one {@code request_refused} line for the kind and a summary line with
 * {@code "repeated": N}, not one line per refusal. Real sockets against a running {@link Ingress} (its gateway
 * on a closed port: nothing here reaches one).
 */
class RefusalAuditFloodTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int FLOOD = 300;

    @Test
    void refusalsWithoutCredentialAreAuditedOnceThenSummarized() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort();
        }
        IngressConfig config = IngressConfig.defaults(new InetSocketAddress("127.0.0.1", 0),
                URI.create("ws://127.0.0.1:" + closedPort + MuxProtocol.DEFAULT_PATH));
        try (Lines audit = new Lines()) {
            Ingress ingress = Ingress.start(config, () -> "no-gateway-token", null);
            try {
                for (int i = 0; i < FLOOD; i++) {
                    assertEquals(407, status(ingress.proxyAddress()), "refused without a credential");
                }
            } finally {
                ingress.close(); // writes the pending summaries
            }
            List<JsonNode> refused = audit.events("request_refused");
            long firsts = refused.stream().filter(n -> !n.has("repeated")).count();
            long covered = refused.stream().mapToLong(n -> n.has("repeated") ? n.get("repeated").asLong() : 1).sum();
            System.out.println(JSON.createObjectNode().put("case", "ingress-407-flood-audit").put("refusals", FLOOD)
                    .put("lines", refused.size()).put("firstLines", firsts).toString());
            assertEquals(1, firsts, "one full line for the kind, of " + refused.size() + " lines");
            assertTrue(refused.size() <= 3, "a few summary lines, not one per refusal: " + refused.size());
            assertEquals(FLOOD, covered, "the lines account for every refusal: " + refused.subList(0, Math.min(3,
                    refused.size())));
        }
    }

    /** Sends an absolute-form request without Proxy-Authorization; returns the status of the answer. */
    private static int status(InetSocketAddress proxy) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(proxy, 5000);
            socket.setSoTimeout(10_000);
            socket.getOutputStream().write(("GET http://localhost:5173/ HTTP/1.1\r\nHost: localhost:5173\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            InputStream in = socket.getInputStream();
            StringBuilder line = new StringBuilder();
            for (int b = in.read(); b >= 0 && b != '\n'; b = in.read()) {
                line.append((char) b);
            }
            return Integer.parseInt(line.toString().split(" ", 3)[1]);
        }
    }

    /** The audit lines written while open. */
    static final class Lines extends AppenderBase<ILoggingEvent> implements AutoCloseable {
        private final List<String> lines = new CopyOnWriteArrayList<>();
        private final Logger logger = (Logger) LoggerFactory.getLogger(AuditLog.LOGGER);

        Lines() {
            setContext(logger.getLoggerContext());
            start();
            logger.addAppender(this);
        }

        @Override
        protected void append(ILoggingEvent event) {
            lines.add(event.getFormattedMessage());
        }

        List<JsonNode> events(String name) throws IOException {
            List<JsonNode> out = new ArrayList<>();
            for (String l : lines) {
                JsonNode n = JSON.readTree(l);
                if (name.equals(n.path("event").asText())) {
                    out.add(n);
                }
            }
            return out;
        }

        @Override
        public void close() {
            logger.detachAppender(this);
            stop();
        }
    }
}
