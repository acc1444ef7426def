package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.mux.wire.MuxProtocol;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;

/**
 * What makes an error page reload itself once its condition clears: a small inline script that re-fetches the
 * page's own URL (same origin, so through the proxy again, uncached) with backoff from 1 s doubling to 10 s, and
 * reloads as soon as the answer no longer carries the {@code ptun-error} header; without script, a meta refresh.
 * The pages' Content-Security-Policy allows only this script and the pages' style, by hash.
 */
final class SelfReload {
    static final String SCRIPT = "(function(){var d=1000;function t(){setTimeout(p,d);d=Math.min(d*2,10000);}"
            + "function p(){fetch(location.href,{cache:\"no-store\",credentials:\"same-origin\"}).then(function(r){"
            + "if(r.headers.has(\"" + MuxProtocol.ERROR_HEADER + "\")){t();}else{location.reload();}},t);}t();})();";
    /** Seconds between reloads of the {@code <noscript>} fallback. */
    static final int NOSCRIPT_REFRESH_SECONDS = 10;
    static final String STYLE = "body{font-family:sans-serif;max-width:42em;margin:3em auto;padding:0 1em;"
            + "line-height:1.4}code{background:#eee;padding:0 .2em}.fix{border-left:4px solid #2a6;"
            + "padding-left:.8em}.muted{color:#666}";
    /** Scripts and styles but these are refused; the script may fetch this origin only. */
    static final String POLICY = "default-src 'none'; script-src '" + sha256(SCRIPT) + "'; style-src '"
            + sha256(STYLE) + "'; connect-src 'self'; base-uri 'none'; form-action 'none'";

    private SelfReload() {
    }

    static String sha256(String text) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            return "sha256-" + Base64.getEncoder().encodeToString(digest);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every JVM", e);
        }
    }
}
