package dev.previewtunnel.sampleapp;

import io.netty.handler.codec.http.HttpRequest;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** {@code /echo-headers} (any method): the request line and headers as JSON, grouped and in arrival order. */
final class EchoHeadersRoute {
    private EchoHeadersRoute() {
    }

    static void echo(Reply reply, HttpRequest req) {
        Map<String, List<String>> headers = new LinkedHashMap<>();
        List<List<String>> raw = new ArrayList<>();
        for (Map.Entry<String, String> h : req.headers()) {
            headers.computeIfAbsent(h.getKey().toLowerCase(Locale.ROOT), k -> new ArrayList<>()).add(h.getValue());
            raw.add(List.of(h.getKey(), h.getValue()));
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("method", req.method().name());
        body.put("uri", req.uri());
        body.put("protocolVersion", req.protocolVersion().text());
        body.put("headers", headers);
        body.put("rawHeaders", raw);
        reply.json(body);
    }
}
