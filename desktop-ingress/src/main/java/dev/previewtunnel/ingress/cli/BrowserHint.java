package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.ConsoleLogging;
import dev.previewtunnel.cli.LogFormat;
import org.slf4j.Logger;

import java.nio.file.Path;

/**
 * The Chromium command a person copies to point a browser profile of its own at the proxy, as {@code run} and
 * {@code open --no-browser} print it: in text mode on a line of its own (no time or level), in JSON inside the
 * message. The password is never in it: only the path of the owner-only credentials file is.
 */
final class BrowserHint {
    private BrowserHint() {
    }

    /** {@code chromium --proxy-server=http://PROXY ... URL}, {@code url} a full URL. */
    static String command(String proxy, String url) {
        return "chromium --proxy-server=http://" + proxy + " --proxy-bypass-list='<-loopback>' "
                + "--user-data-dir=$(mktemp -d) " + url;
    }

    /** {@code run}'s ready event: where the proxy is, the browser command, where the credentials are. */
    static void logReady(Logger log, ConsoleLogging logging, String proxy, String url, Path credentials) {
        String browser = command(proxy, url);
        if (logging.format() == LogFormat.TEXT) {
            log.atInfo()
                    .setMessage("proxy ready on {}; start a browser profile of its own with the line below and "
                            + "give it the proxy username and password from {} when asked (Playwright: proxy "
                            + "server http://{} with the same username and password)")
                    .addArgument(proxy).addArgument(credentials.toAbsolutePath()).addArgument(proxy)
                    .addKeyValue("event", "ready")
                    .log();
            logging.plainLine(browser);
        } else {
            log.atInfo()
                    .setMessage("proxy ready; start a browser profile of its own with: {} and give the proxy "
                            + "username and password from {} when asked (Playwright: proxy server "
                            + "http://{} with the same username and password)")
                    .addArgument(browser).addArgument(credentials.toAbsolutePath()).addArgument(proxy)
                    .addKeyValue("event", "ready")
                    .log();
        }
    }
}
