package dev.previewtunnel.spikes.chain;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** A proxy's answer as bytes on the wire ({@link ProxyClients#rawExchange}), split into status, headers and body. */
record RawAnswer(int status, Map<String, String> headers, String body, int bodyBytes) {

    static RawAnswer parse(String wire) {
        int end = wire.indexOf("\r\n\r\n");
        if (end < 0) {
            throw new AssertionError("no complete response head: [" + wire + "]");
        }
        String[] lines = wire.substring(0, end).split("\r\n");
        Map<String, String> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.merge(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT),
                    lines[i].substring(colon + 1).trim(), (a, b) -> a + ", " + b);
        }
        byte[] raw = wire.substring(end + 4).getBytes(StandardCharsets.ISO_8859_1);
        return new RawAnswer(Integer.parseInt(lines[0].split(" ")[1]), headers,
                new String(raw, StandardCharsets.UTF_8), raw.length);
    }

    String header(String name) {
        return headers.getOrDefault(name.toLowerCase(Locale.ROOT), "");
    }

    @Override
    public String toString() {
        return status + " " + headers + "\n" + body;
    }
}
