package dev.previewtunnel.ingress.hostile;

import dev.previewtunnel.testing.NettyLeakGuard;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static dev.previewtunnel.testing.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16, item 7: HTTP/1.1 framing at the ingress follows RFC 9112, against a real ingress, gateway and target.
 * Every request whose framing is ambiguous or broken is answered 400 and the target never reads a complete request;
 * pipelined requests are all answered, in order.
 */
class Rfc9112FramingTest {
    FramingStack stack;
    String url;

    @BeforeEach
    void start(@TempDir Path dir) throws Exception {
        stack = new FramingStack(dir);
        url = "http://localhost:" + stack.port();
    }

    @AfterEach
    void stop() throws Exception {
        stack.close();
        List<String> leaks = NettyLeakGuard.collectLeaks();
        assertTrue(leaks.isEmpty(), String.join("\n\n", leaks));
    }

    private void assertRefusedAndTargetSawNoRequest(String wire) throws Exception {
        FramingStack.Answer answer = stack.exchange(wire, 0);
        assertEquals(1, answer.responses().size(), answer.toString());
        assertEquals(400, answer.first().status(), answer.toString());
        assertEquals("bad_request", answer.first().code());
        assertEquals(List.of(), stack.requests, "the target read a request");
    }

    @Test
    void twoHostHeadersAre400() throws Exception {
        String p = Integer.toString(stack.port());
        assertRefusedAndTargetSawNoRequest("GET " + url + "/a HTTP/1.1\r\nHost: localhost:" + p
                + "\r\nHost: localhost:" + p + "\r\n" + stack.auth() + "\r\n");
        assertRefusedAndTargetSawNoRequest("GET " + url + "/b HTTP/1.1\r\nHost: localhost:" + p
                + "\r\nHost: evil.example\r\n" + stack.auth() + "\r\n");
    }

    @Test
    void anOverflowingChunkSizeIs400AndNeverAnEmptyBodyForwarded() throws Exception {
        for (String size : List.of("ffffffffffffffffff", "100000000", "-1", "5 5", "zz")) {
            assertRefusedAndTargetSawNoRequest("POST " + url + "/up HTTP/1.1\r\n" + stack.auth()
                    + "Transfer-Encoding: chunked\r\n\r\n" + size + "\r\nabcde\r\n0\r\n\r\n");
        }
        // A chunk whose data is not ended by CRLF.
        assertRefusedAndTargetSawNoRequest("POST " + url + "/up HTTP/1.1\r\n" + stack.auth()
                + "Transfer-Encoding: chunked\r\n\r\n5\r\nabcdeXX\r\n0\r\n\r\n");
    }

    @Test
    void contentLengthWithTransferEncodingAndOtherSmugglingShapesAre400() throws Exception {
        String post = "POST " + url + "/up HTTP/1.1\r\n" + stack.auth();
        assertRefusedAndTargetSawNoRequest(post + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5\r\nabcde\r\n0\r\n\r\n");
        assertRefusedAndTargetSawNoRequest(post + "Transfer-Encoding: chunked\r\nContent-Length: 30\r\n\r\n"
                + "5\r\nabcde\r\n0\r\n\r\n");
        assertRefusedAndTargetSawNoRequest(post + "Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd");
        assertRefusedAndTargetSawNoRequest(post + "Transfer-Encoding: gzip\r\n\r\nabc");
        assertRefusedAndTargetSawNoRequest(post + "Transfer-Encoding: chunked, gzip\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
        assertRefusedAndTargetSawNoRequest(post.replace("HTTP/1.1", "HTTP/1.0")
                + "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
        assertRefusedAndTargetSawNoRequest(post + "Transfer-Encoding : chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
        assertRefusedAndTargetSawNoRequest(post + "Bad Name: x\r\nContent-Length: 0\r\n\r\n");
        // A continuation line with nothing to continue (RFC 9112 section 2.2); a fold after a field is joined
        // with SP by the decoder, as section 5.2 allows, and never reaches the target as a fold.
        assertRefusedAndTargetSawNoRequest("POST " + url + "/up HTTP/1.1\r\n Folded-First: x\r\n" + stack.auth()
                + "Content-Length: 0\r\n\r\n");
    }

    @Test
    void pipelinedRequestsAreAllAnsweredInOrder() throws Exception {
        String wire = "GET " + url + "/one HTTP/1.1\r\n" + stack.auth() + "\r\n"
                + "POST " + url + "/two HTTP/1.1\r\n" + stack.auth() + "Content-Length: 5\r\n\r\nhello"
                + "GET " + url + "/three HTTP/1.1\r\n" + stack.auth() + "\r\n";
        FramingStack.Answer answer = stack.exchange(wire, 3);
        assertEquals(3, answer.responses().size(), answer.toString());
        assertEquals(List.of("/one", "/two", "/three"),
                answer.responses().stream().map(FramingStack.Answer.Response::body).toList());
        assertEquals(List.of("GET /one 0", "POST /two 5", "GET /three 0"), stack.requests);
    }

    @Test
    void bytesSentRightAfterAConnectHeadAreTheTunnelsFirstBytes() throws Exception {
        String p = Integer.toString(stack.port());
        // Not waiting for the 200 (RFC 9110 section 9.3.6 lets a client send early): the request inside the tunnel
        // must reach the target, not be decoded as HTTP by the proxy and dropped.
        FramingStack.Answer answer = stack.exchange("CONNECT localhost:" + p + " HTTP/1.1\r\nHost: localhost:" + p
                + "\r\n" + stack.auth() + "\r\nGET /early HTTP/1.1\r\nHost: localhost:" + p + "\r\n\r\n", 2);
        assertEquals(2, answer.responses().size(), answer.toString());
        assertEquals(200, answer.responses().get(0).status());
        assertEquals("/early", answer.responses().get(1).body());
        assertEquals(List.of("GET /early 0"), stack.requests);
    }

    @Test
    void aBodyBrokenAfterItsHeadWentOutEndsTheStreamNotTheBody() throws Exception {
        try (Socket s = new Socket()) {
            s.connect(stack.proxy(), 5000);
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            out.write(("POST " + url + "/up HTTP/1.1\r\n" + stack.auth() + "Transfer-Encoding: chunked\r\n\r\n"
                    + "5\r\nabcde\r\n").getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            until("the target read the head", Duration.ofSeconds(10), () -> !stack.heads.isEmpty());
            out.write("ffffffffffffffffff\r\nabcde\r\n0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = s.getInputStream();
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            try {
                in.transferTo(got);
            } catch (SocketTimeoutException e) {
                throw new AssertionError("neither an answer nor a close: " + got);
            } catch (java.io.IOException reset) {
                // closed
            }
            var responses = FramingStack.Answer.parse(got.toString(StandardCharsets.ISO_8859_1));
            assertEquals(1, responses.size(), got.toString());
            assertEquals(400, responses.get(0).status());
        }
        assertEquals(List.of("POST /up HTTP/1.1"), stack.heads);
        assertEquals(List.of(), stack.requests, "the target must never see the body end as if complete");
    }
}
