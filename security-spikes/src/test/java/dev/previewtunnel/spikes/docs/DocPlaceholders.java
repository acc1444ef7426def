package dev.previewtunnel.spikes.docs;

import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the docs write that a sandboxed run must replace, each with why. Applied, in this order, to the text of
 * every command before it runs (never to the documented output, which is compared by shape only).
 *
 * <table>
 * <tr><th>in the docs</th><th>in the run</th><th>why</th></tr>
 * <tr><td>{@code 5173}</td><td>a free port</td><td>the dev server's port: 5173 may be taken on the machine</td></tr>
 * <tr><td>{@code 7443}</td><td>a free port</td><td>the gateway's port, likewise</td></tr>
 * <tr><td>{@code /tmp/site}</td><td>{@code SANDBOX/site}</td><td>no file outside the sandbox</td></tr>
 * <tr><td>{@code /path/to/preview-tunnel}</td><td>the checkout</td><td>where the jars are</td></tr>
 * <tr><td>{@code 127.0.0.1:PORT}</td><td>{@code $PTUN_PROXY}</td><td>the proxy address run printed</td></tr>
 * <tr><td>a grant id the docs show ({@code LC05CCMLHyt7OTjq6ssbrQ})</td><td>{@code $PTUN_GRANT_ID}</td>
 * <td>the id grant add printed</td></tr>
 * </table>
 */
record DocPlaceholders(int devPort, int gatewayPort, Path sandbox, Path root) {
    /** The literal grant id the docs show in revoke examples. */
    static final String DOC_GRANT_ID = "LC05CCMLHyt7OTjq6ssbrQ";

    String apply(String command) {
        String s = port(command, 5173, devPort);
        s = port(s, 7443, gatewayPort);
        s = s.replace("/tmp/site", sandbox.resolve("site").toString());
        s = s.replace("/path/to/preview-tunnel", root.toString());
        s = s.replace("127.0.0.1:PORT", "$PTUN_PROXY");
        return s.replace(DOC_GRANT_ID, "$PTUN_GRANT_ID");
    }

    /** The table, for failure messages. */
    List<String> shown() {
        return List.of("5173 -> " + devPort, "7443 -> " + gatewayPort, "/tmp/site -> SANDBOX/site",
                "/path/to/preview-tunnel -> " + root, "127.0.0.1:PORT -> $PTUN_PROXY",
                DOC_GRANT_ID + " -> $PTUN_GRANT_ID");
    }

    private static String port(String text, int documented, int actual) {
        return Pattern.compile("(?<![0-9])" + documented + "(?![0-9])").matcher(text)
                .replaceAll(Matcher.quoteReplacement(Integer.toString(actual)));
    }
}
