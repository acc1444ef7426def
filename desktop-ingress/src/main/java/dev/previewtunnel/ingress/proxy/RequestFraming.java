package dev.previewtunnel.ingress.proxy;

import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpServerCodec;

/**
 * HTTP/1.1 message framing of browser requests (RFC 9112), judged on what Netty's decoder produced; never by
 * parsing bytes here. The decoder is built with RFC 9112 transfer-coding rules, so Content-Length together with
 * Transfer-Encoding, Transfer-Encoding in an HTTP/1.0 request, a final coding other than chunked, and two
 * Content-Length fields all arrive as a failed {@code DecoderResult}; a chunk size that overflows or a broken chunk
 * arrives as a failed content part. Every failure, on the head or on any part after it, ends the request with a
 * 400 (or a close once an answer has started): a body cut short must never be forwarded as if it had ended.
 * Pure: unit-testable without a Channel.
 */
final class RequestFraming {
    /** Request line and header section limits of the browser side. */
    static final int MAX_INITIAL_LINE = 8192;
    static final int MAX_CHUNK = 64 * 1024;

    private RequestFraming() {
    }

    /** The browser-side codec: the limits above, {@code maxRequestHead} for the header section, RFC 9112 rules. */
    static HttpServerCodec browserCodec(int maxRequestHead) {
        return new HttpServerCodec(new HttpDecoderConfig()
                .setMaxInitialLineLength(MAX_INITIAL_LINE)
                .setMaxHeaderSize(maxRequestHead)
                .setMaxChunkSize(MAX_CHUNK)
                .setUseRfc9112TransferEncoding(true));
    }

    /**
     * After a CONNECT head, what the client sends is the tunnel's, not HTTP: the decoder half of the codec is
     * removed at once, so bytes sent without waiting for the 200 (a pipelined request, a TLS ClientHello) come
     * through raw instead of being decoded and lost. The encoder stays for the 200 or the error page.
     */
    static void stopDecoding(io.netty.channel.ChannelHandler codec) {
        if (codec instanceof HttpServerCodec http) {
            http.removeInboundHandler();
        }
    }

    /** Why this request head cannot be proxied, or null when its framing is sound. */
    static String headProblem(HttpRequest req) {
        if (!req.decoderResult().isSuccess()) {
            return "malformed or oversized request head";
        }
        if (req.headers().getAll(HttpHeaderNames.HOST).size() > 1) {
            return "more than one Host header"; // RFC 9112 section 3.2: answered 400
        }
        return null;
    }

    /** Whether a body part was decoded intact (a failed one also ends the decoder: nothing after it is read). */
    static boolean bodyIntact(HttpContent part) {
        return part.decoderResult().isSuccess();
    }
}
