package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.cli.Cli;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;

/**
 * Asks a proxy address whether desktop-ingress's proxy answers there: a request without a session credential must
 * be refused with 407 {@code proxy_auth_required} (docs/security.md, attribution by proxy credential) and nothing
 * is opened on its behalf, so the probe is harmless.
 */
final class ProxyProbe {
    private ProxyProbe() {
    }

    /** Null when the proxy answers like desktop-ingress's, else what went wrong. */
    static String check(String hostPort, Duration timeout) {
        int colon = hostPort.lastIndexOf(':');
        if (colon < 0) {
            return "no proxy address in the status";
        }
        String host = hostPort.substring(0, colon).replace("[", "").replace("]", "");
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, Integer.parseInt(hostPort.substring(colon + 1))),
                    (int) timeout.toMillis());
            socket.setSoTimeout((int) timeout.toMillis());
            OutputStream out = socket.getOutputStream();
            out.write(("GET http://doctor.invalid/ HTTP/1.1\r\nHost: doctor.invalid\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String head = new String(socket.getInputStream().readNBytes(1024), StandardCharsets.ISO_8859_1);
            if (head.startsWith("HTTP/1.1 407") && head.toLowerCase(Locale.ROOT).contains("proxy_auth_required")) {
                return null;
            }
            int eol = head.indexOf('\r');
            return "it answered '" + Cli.shown(eol > 0 ? head.substring(0, eol) : head) + "' instead of 407";
        } catch (IOException | NumberFormatException e) {
            return "cannot connect (" + e.getClass().getSimpleName() + ")";
        }
    }
}
