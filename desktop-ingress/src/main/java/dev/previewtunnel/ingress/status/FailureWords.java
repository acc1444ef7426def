package dev.previewtunnel.ingress.status;

import java.util.Locale;

/**
 * A tunnel connection's last failure in words for the status page. The failure is kept as its cause's text (e.g.
 * {@code finishConnect(..) failed with error(-111)}), which is for the operator's log: the page shows only the
 * words this maps it to.
 */
final class FailureWords {
    private FailureWords() {
    }

    static String of(String raw) {
        if (raw == null) {
            return null;
        }
        String s = raw.toLowerCase(Locale.ROOT);
        if (s.contains("refused") || s.contains("(-111)")) {
            return "the gateway refused the connection: it is not running, or the way to it is down";
        }
        if (s.contains("timed out") || s.contains("timeout")) {
            return "the gateway did not answer in time";
        }
        if (s.contains("401") || s.contains("403") || s.contains("token")) {
            return "the gateway did not accept the connection token";
        }
        if (s.contains("goaway") || s.contains("drain") || s.contains("shut")) {
            return "the gateway closed the connection (restarting or shutting down)";
        }
        if (s.contains("resolve") || s.contains("unknown host") || s.contains("unreachable")) {
            return "the gateway's address could not be reached";
        }
        return "the connection failed (the ingress log has the details)";
    }
}
