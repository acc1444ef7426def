package dev.previewtunnel.spikes.browser;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.ingress.browser.DevTools;
import dev.previewtunnel.spikes.lab.Chromium;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A real headless Chromium, started with the flags a preview browser session uses (the ingress as its HTTP proxy,
 * {@code <-loopback>} so that {@code localhost} goes to the proxy too) or with no proxy at all, driven over the
 * DevTools protocol; the process itself is the lab's {@link Chromium}.
 */
public final class Browser implements AutoCloseable {
    public static final String CHROMIUM = Chromium.NAME;

    /** How to start the browser. {@code proxy == null}: no proxy (direct connections, {@code --no-proxy-server}). */
    public record Options(InetSocketAddress proxy, String username, String password, Path userDataDir,
                          boolean keepUserDataDir) {
        public static Options proxied(InetSocketAddress proxy, String username, String password) {
            return new Options(proxy, username, password, null, false);
        }

        public static Options direct() {
            return new Options(null, null, null, null, false);
        }

        /** Same settings, this (kept) profile directory. */
        public Options withProfile(Path dir) {
            return new Options(proxy, username, password, dir, true);
        }
    }

    private final Options options;
    private final Chromium chromium;
    private final DevTools cdp;
    private final List<Page> pages = new CopyOnWriteArrayList<>();

    private Browser(Options options, Chromium chromium) {
        this.options = options;
        this.chromium = chromium;
        this.cdp = chromium.cdp();
    }

    /** The proxy flags for these options (the rest of the command line is {@link Chromium#commandLine}'s). */
    public static List<String> proxyFlags(Options options) {
        if (options.proxy() == null) {
            return List.of("--no-proxy-server");
        }
        return List.of("--proxy-server=http://" + options.proxy().getHostString() + ":" + options.proxy().getPort(),
                "--proxy-bypass-list=<-loopback>");
    }

    public static Browser launch(Options options) {
        return new Browser(options, Chromium.launch(proxyFlags(options), options.userDataDir()));
    }

    /** Opens a new tab and attaches to it (flattened session); proxy auth is answered from the options. */
    public Page newPage() {
        ObjectNode create = DevTools.params().put("url", "about:blank");
        String targetId = cdp.send("Target.createTarget", create).get("targetId").asText();
        JsonNode attached = cdp.send("Target.attachToTarget",
                DevTools.params().put("targetId", targetId).put("flatten", true));
        Page page = new Page(cdp, targetId, attached.get("sessionId").asText(), options.username(),
                options.password());
        pages.add(page);
        return page;
    }

    public DevTools cdp() {
        return cdp;
    }

    public Path userDataDir() {
        return chromium.profile();
    }

    public long startMillis() {
        return chromium.startMillis();
    }

    public String version() {
        return chromium.version();
    }

    public String logTail() {
        return chromium.logTail();
    }

    /** Chromium's graceful shutdown (its profile is flushed), then the process tree is destroyed. */
    @Override
    public void close() {
        chromium.close();
    }
}
