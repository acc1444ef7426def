package dev.previewtunnel.ingress.browser;

import com.fasterxml.jackson.databind.JsonNode;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * What the tests look at in a launched browser, over the launcher's own DevTools pipe (the only way in: there is
 * no port); they only read titles and open tabs, as a user would.
 */
final class BrowserPages {
    private final DevTools devTools;

    BrowserPages(LaunchedBrowser browser) {
        this.devTools = browser.devTools();
    }

    /** A new tab on {@code url}, as a user opening one later. */
    void openTab(String url) {
        devTools.send("Target.createTarget", DevTools.params().put("url", url));
    }

    /** A new window on {@code url}; {@code incognito}: in a new browser context, with its own (empty) auth cache. */
    void openWindow(String url, boolean incognito) {
        var params = DevTools.params().put("url", url).put("newWindow", true);
        if (incognito) {
            params.put("browserContextId", devTools.send("Target.createBrowserContext", null)
                    .path("browserContextId").asText());
        }
        devTools.send("Target.createTarget", params);
    }

    /** Waits until some page shows {@code title}. */
    void awaitTitle(String title, Duration timeout) {
        await("a page titled " + title + " (pages: %s)", timeout, () -> titles().contains("\"" + title + "\""));
    }

    String titles() {
        StringBuilder b = new StringBuilder();
        for (JsonNode t : devTools.send("Target.getTargets", null).path("targetInfos")) {
            if ("page".equals(t.path("type").asText())) {
                b.append('"').append(t.path("title").asText()).append("\" ").append(t.path("url").asText()).append("; ");
            }
        }
        return b.toString();
    }

    void await(String what, Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out after " + timeout + " waiting for " + what.formatted(titles()));
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(25));
        }
    }
}
