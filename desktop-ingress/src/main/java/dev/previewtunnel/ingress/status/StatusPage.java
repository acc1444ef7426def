package dev.previewtunnel.ingress.status;

import java.time.Duration;
import java.time.Instant;

/**
 * The HTML of a session's status page ({@code http://preview.localhost/}): its previews as links with their grants'
 * expiry, the tunnel, the front door's lines and discovered ports (each with an "Open" button that posts to
 * {@code /open}), and the session's recent errors. Every value is escaped; it reloads itself every
 * {@link #REFRESH_SECONDS} seconds.
 */
public final class StatusPage {
    public static final int REFRESH_SECONDS = 5;
    public static final String STYLE = "body{font-family:sans-serif;max-width:52em;margin:2em auto;padding:0 1em;"
            + "line-height:1.4}table{border-collapse:collapse}td,th{text-align:left;padding:.2em .8em .2em 0;"
            + "vertical-align:top}.bad{color:#b00}.ok{color:#070}.muted{color:#666}form{display:inline}";

    private StatusPage() {
    }

    public static String render(StatusFacts f) {
        StringBuilder b = new StringBuilder(4096)
                .append("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>preview-tunnel status</title>\n")
                .append("<meta http-equiv=\"refresh\" content=\"").append(REFRESH_SECONDS).append("\">\n<style>")
                .append(STYLE).append("</style>\n</head>\n<body>\n<h1>preview-tunnel</h1>\n<p class=\"muted\">"
                        + "This browser session: <code>").append(Html.escape(f.sessionId()))
                .append("</code> &middot; updated ").append(Html.time(f.now())).append("</p>\n");
        previews(b, f);
        b.append("<h2>Tunnel</h2>\n<table id=\"tunnel\">\n");
        for (StatusFacts.Tunnel t : f.tunnels()) {
            row(b, t.name(), t.words(), t.connected());
        }
        for (StatusLine l : f.frontDoor()) {
            row(b, l.label(), l.value(), l.ok());
        }
        b.append("</table>\n");
        ports(b, f);
        errors(b, f);
        return b.append("</body></html>\n").toString();
    }

    private static void previews(StringBuilder b, StatusFacts f) {
        b.append("<h2>Previews</h2>\n");
        if (f.previews().isEmpty()) {
            b.append("<p id=\"previews\">No preview is granted to this browser session yet.</p>\n");
            return;
        }
        b.append("<table id=\"previews\">\n<tr><th>Open</th><th>Target</th><th>Grant</th></tr>\n");
        for (StatusFacts.Preview p : f.previews()) {
            b.append("<tr><td><a href=\"").append(Html.escape(p.url())).append("\">").append(Html.escape(p.url()))
                    .append("</a>");
            if (!p.url().equals(p.virtualHostUrl())) {
                b.append("<br><small class=\"muted\">also ").append(Html.escape(p.virtualHostUrl()))
                        .append("</small>");
            }
            b.append("</td><td>").append(Html.escape(p.target())).append(" in ")
                    .append(Html.escape(p.environment())).append("</td><td>").append(expiry(p, f.now()));
            if (p.renewalProblem() != null) {
                b.append("<br><span class=\"bad\">renewal failed: ").append(Html.escape(p.renewalProblem()))
                        .append("</span>");
            }
            b.append("</td></tr>\n");
        }
        b.append("</table>\n");
    }

    private static String expiry(StatusFacts.Preview p, Instant now) {
        if (p.expiresAt() == null) {
            return "";
        }
        Duration left = Duration.between(now, p.expiresAt());
        if (left.isNegative() || left.isZero()) {
            return "<span class=\"bad\">expired at " + Html.time(p.expiresAt()) + "</span>";
        }
        long minutes = left.toMinutes();
        return "expires " + Html.time(p.expiresAt()) + " (in " + (minutes > 0 ? minutes + " min" : left.toSeconds()
                + " s") + ")";
    }

    private static void ports(StringBuilder b, StatusFacts f) {
        if (f.discoveredPorts() == null) {
            return;
        }
        b.append("<h2>Ports listening in the environment, not opened yet</h2>\n");
        if (f.discoveredPorts().isEmpty()) {
            b.append("<p id=\"ports\">None.</p>\n");
            return;
        }
        b.append("<table id=\"ports\">\n");
        for (int port : f.discoveredPorts()) {
            b.append("<tr><td>127.0.0.1:").append(port).append("</td><td><form method=\"post\" action=\"/open\">"
                            + "<input type=\"hidden\" name=\"port\" value=\"").append(port)
                    .append("\"><button type=\"submit\">Open</button></form></td></tr>\n");
        }
        b.append("</table>\n");
    }

    private static void errors(StringBuilder b, StatusFacts f) {
        b.append("<h2>Last errors</h2>\n");
        if (f.errors().isEmpty()) {
            b.append("<p id=\"errors\">None.</p>\n");
            return;
        }
        b.append("<table id=\"errors\">\n");
        for (RecentErrors.Entry e : f.errors()) {
            b.append("<tr><td>").append(Html.time(e.at())).append("</td><td>").append(Html.escape(e.authority()))
                    .append("</td><td><code>").append(Html.escape(e.code())).append("</code></td><td>")
                    .append(Html.escape(e.words())).append("</td></tr>\n");
        }
        b.append("</table>\n");
    }

    private static void row(StringBuilder b, String label, String value, boolean ok) {
        b.append("<tr><th>").append(Html.escape(label)).append("</th><td class=\"").append(ok ? "ok" : "bad")
                .append("\">").append(Html.escape(value)).append("</td></tr>\n");
    }
}
