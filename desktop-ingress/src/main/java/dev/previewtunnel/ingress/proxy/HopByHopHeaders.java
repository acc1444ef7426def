package dev.previewtunnel.ingress.proxy;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;

import java.util.ArrayList;
import java.util.List;

/**
 * Removes the headers that belong to one hop (RFC 9110 section 7.6.1) and every {@code Proxy-*} header before a
 * message crosses the proxy. {@code Transfer-Encoding} and {@code Content-Length} stay: the message body is
 * re-framed exactly as it arrived. For an upgrade ({@code Connection: upgrade}) the {@code Upgrade} header and
 * {@code Connection: upgrade} are kept, or WebSocket upgrades would break.
 */
final class HopByHopHeaders {
    private HopByHopHeaders() {
    }

    static void strip(HttpHeaders headers, boolean keepUpgrade) {
        List<String> listed = new ArrayList<>();
        for (String value : headers.getAll(HttpHeaderNames.CONNECTION)) {
            for (String token : value.split(",")) {
                String t = token.trim();
                if (!t.isEmpty()) {
                    listed.add(t);
                }
            }
        }
        boolean upgrade = keepUpgrade && headers.containsValue(HttpHeaderNames.CONNECTION, HttpHeaderValues.UPGRADE, true)
                && headers.contains(HttpHeaderNames.UPGRADE);
        for (String name : listed) {
            if (!(upgrade && HttpHeaderNames.UPGRADE.contentEqualsIgnoreCase(name))
                    && !HttpHeaderNames.TRANSFER_ENCODING.contentEqualsIgnoreCase(name)
                    && !HttpHeaderNames.CONTENT_LENGTH.contentEqualsIgnoreCase(name)) {
                headers.remove(name);
            }
        }
        headers.remove(HttpHeaderNames.CONNECTION);
        headers.remove(HttpHeaderNames.KEEP_ALIVE);
        headers.remove(HttpHeaderNames.TE);
        headers.remove(HttpHeaderNames.TRAILER);
        headers.remove(HttpHeaderNames.PROXY_AUTHORIZATION);
        headers.remove(HttpHeaderNames.PROXY_AUTHENTICATE);
        headers.remove("Proxy-Connection");
        if (upgrade) {
            headers.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.UPGRADE);
        } else {
            headers.remove(HttpHeaderNames.UPGRADE);
        }
        List<String> proxyHeaders = new ArrayList<>();
        for (var entry : headers) {
            if (entry.getKey().regionMatches(true, 0, "proxy-", 0, 6)) {
                proxyHeaders.add(entry.getKey());
            }
        }
        proxyHeaders.forEach(headers::remove);
    }
}
