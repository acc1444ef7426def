package dev.previewtunnel.ingress.proxy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * One request written byte for byte to the proxy and everything it answered until it closed the connection:
 * what a browser's proxy client sees, without a client library tidying the answer up.
 */
record RawProxyExchange(int status, Map<String, String> headers, byte[] body) {

    static String basic(String user, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }

    /** Sends {@code head} (request line and headers, without the final empty line) and reads to end of stream. */
    static RawProxyExchange send(InetSocketAddress proxy, String head) throws IOException {
        try (Socket s = new Socket(proxy.getAddress(), proxy.getPort())) {
            s.setSoTimeout(15_000);
            s.getOutputStream().write((head + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            s.getOutputStream().flush();
            return parse(s.getInputStream().readAllBytes());
        }
    }

    /** Sends {@code head} (without the final empty line), a Content-Length for {@code body}, and the body. */
    static RawProxyExchange sendWithBody(InetSocketAddress proxy, String head, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.ISO_8859_1);
        try (Socket s = new Socket(proxy.getAddress(), proxy.getPort())) {
            s.setSoTimeout(15_000);
            s.getOutputStream().write((head + "\r\nContent-Length: " + bytes.length + "\r\n\r\n")
                    .getBytes(StandardCharsets.ISO_8859_1));
            s.getOutputStream().write(bytes);
            s.getOutputStream().flush();
            return parse(s.getInputStream().readAllBytes());
        }
    }

    static RawProxyExchange parse(byte[] all) throws IOException {
        String text = new String(all, StandardCharsets.ISO_8859_1);
        int end = text.indexOf("\r\n\r\n");
        if (end < 0) {
            throw new IOException("no complete response head in " + all.length + " bytes");
        }
        String[] lines = text.substring(0, end).split("\r\n");
        int status = Integer.parseInt(lines[0].split(" ")[1]);
        Map<String, String> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.put(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).trim());
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        body.write(all, end + 4, all.length - end - 4);
        return new RawProxyExchange(status, headers, body.toByteArray());
    }

    String header(String name) {
        return headers.getOrDefault(name.toLowerCase(Locale.ROOT), "");
    }

    String bodyText() {
        return new String(body, StandardCharsets.UTF_8);
    }

    @Override
    public String toString() {
        return status + " " + headers + " " + bodyText();
    }
}
