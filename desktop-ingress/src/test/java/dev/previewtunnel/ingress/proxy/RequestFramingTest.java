package dev.previewtunnel.ingress.proxy;

import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the browser codec ({@link RequestFraming#browserCodec}) and {@link RequestFraming} make of RFC 9112 framing
 * shapes, without a proxy: pins the Netty behaviour the proxy relies on (a Netty upgrade that changed it fails here).
 */
class RequestFramingTest {
    private static final String POST = "POST http://localhost:5173/ HTTP/1.1\r\n";

    /** "head:<problem or ok>" then "body:<intact?>" per part, for {@code wire} decoded by the browser codec. */
    private static List<String> judge(String wire) {
        EmbeddedChannel ch = new EmbeddedChannel(RequestFraming.browserCodec(16 * 1024));
        List<String> out = new ArrayList<>();
        try {
            ch.writeInbound(Unpooled.copiedBuffer(wire, StandardCharsets.ISO_8859_1));
            Object o;
            while ((o = ch.readInbound()) != null) {
                try {
                    if (o instanceof HttpRequest req) {
                        String problem = RequestFraming.headProblem(req);
                        out.add("head:" + (problem == null ? "ok" : "refused"));
                    } else if (o instanceof HttpContent c) {
                        out.add("body:" + (RequestFraming.bodyIntact(c) ? "ok" : "broken"));
                    }
                } finally {
                    ReferenceCountUtil.release(o);
                }
            }
        } finally {
            ch.finishAndReleaseAll();
        }
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "Host: a\r\nHost: a\r\n\r\n",
            "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            "Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
            "Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
            "Transfer-Encoding: gzip\r\n\r\nabc",
            "Transfer-Encoding: chunked, gzip\r\n\r\nabc",
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
            " Folded: x\r\n\r\n",
            "Bad Name: x\r\n\r\n",
            "Content-Length: +3\r\n\r\nabc"})
    void headsWithAmbiguousFramingAreRefused(String headers) {
        List<String> parts = judge(POST + headers);
        assertFalse(parts.isEmpty());
        assertEquals("head:refused", parts.get(0), parts.toString());
    }

    @Test
    void transferEncodingInHttp10IsRefused() {
        assertEquals("head:refused", judge(POST.replace("1.1", "1.0")
                + "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n").get(0));
    }

    @ParameterizedTest
    @ValueSource(strings = {"ffffffffffffffffff\r\nabcde\r\n", "100000000\r\nabcde\r\n", "-1\r\nabcde\r\n",
            "5 5\r\nabcde\r\n", "zz\r\n", "5\r\nabcdeXX\r\n", "5;x=\"open\r\nabcde\r\n"})
    void aBrokenChunkEndsWithABrokenPartNeverAnIntactEnd(String chunks) {
        List<String> parts = judge(POST + "Transfer-Encoding: chunked\r\n\r\n" + chunks + "0\r\n\r\n");
        assertEquals("head:ok", parts.get(0), parts.toString());
        assertTrue(parts.contains("body:broken"), parts.toString());
        // Nothing after the broken part: the decoder stops there, so no later part can look like the end.
        assertEquals("body:broken", parts.get(parts.size() - 1), parts.toString());
    }

    @Test
    void soundRequestsPassAndAFoldAfterAFieldIsJoined() {
        assertEquals(List.of("head:ok", "body:ok", "body:ok"),
                judge(POST + "Host: localhost:5173\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"));
        EmbeddedChannel ch = new EmbeddedChannel(RequestFraming.browserCodec(16 * 1024));
        ch.writeInbound(Unpooled.copiedBuffer(POST + "X-A: a\r\n b\r\n\r\n", StandardCharsets.ISO_8859_1));
        HttpRequest req = ch.readInbound();
        assertNull(RequestFraming.headProblem(req));
        assertNotNull(req.headers().get("X-A"));
        assertEquals("a b", req.headers().get("X-A"));
        ch.finishAndReleaseAll();
    }
}
