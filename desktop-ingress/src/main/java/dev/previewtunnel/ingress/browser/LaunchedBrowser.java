package dev.previewtunnel.ingress.browser;

import com.fasterxml.jackson.databind.JsonNode;

import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A browser started by {@link BrowserLauncher}: its process, the DevTools connection that answers the proxy
 * credential, and {@link #exited()} for the caller that runs until the user closes it.
 */
public final class LaunchedBrowser implements AutoCloseable {
    private static final long GRACEFUL_CLOSE_SECONDS = 10;

    private final Process process;
    private final Path profileDir;
    private final DevTools devTools;
    private final ProxyCredentialAnswerer answerer;
    private final CompletableFuture<Integer> exited;

    LaunchedBrowser(Process process, Path profileDir, DevTools devTools, ProxyCredentialAnswerer answerer) {
        this.process = process;
        this.profileDir = profileDir;
        this.devTools = devTools;
        this.answerer = answerer;
        this.exited = process.onExit().thenApply(Process::exitValue);
    }

    public long pid() {
        return process.pid();
    }

    /** Completes with the exit status when the browser process exits (the user closed it, or it crashed). */
    public CompletableFuture<Integer> exited() {
        return exited.copy();
    }

    /**
     * The first URL in the tab the browser opened with ({@code about:blank}), each other one in a new tab. A launch
     * with no URLs lets the caller start the browser while the tunnel comes up, and open them once it is up.
     */
    public void open(List<URI> urls) {
        if (urls.isEmpty()) {
            return;
        }
        String first = initialPage();
        for (int i = 0; i < urls.size(); i++) {
            String url = urls.get(i).toString();
            if (i == 0 && first != null) {
                navigate(first, url);
            } else {
                devTools.send("Target.createTarget", DevTools.params().put("url", url));
            }
        }
    }

    private String initialPage() {
        for (JsonNode t : devTools.send("Target.getTargets", null).path("targetInfos")) {
            if ("page".equals(t.path("type").asText())) {
                return t.path("targetId").asText();
            }
        }
        return null;
    }

    private void navigate(String targetId, String url) {
        String session = devTools.send("Target.attachToTarget",
                DevTools.params().put("targetId", targetId).put("flatten", true)).path("sessionId").asText();
        devTools.send("Page.navigate", DevTools.params().put("url", url), session);
        devTools.send("Target.detachFromTarget", DevTools.params().put("sessionId", session));
    }

    /** The DevTools connection this launcher holds (tests and diagnostics; the browser's own endpoint). */
    DevTools devTools() {
        return devTools;
    }

    ProxyCredentialAnswerer answerer() {
        return answerer;
    }

    /**
     * {@code Browser.close} (the profile is written to disk), a bounded wait, then the process tree is destroyed
     * whatever happened, and what a killed browser leaves in {@code /tmp} removed ({@link SingletonSocketDir}). The
     * profile directory stays.
     */
    @Override
    public void close() {
        // Helpers (zygotes, renderers) are listed first: once the browser has exited they are no longer its
        // descendants, and a graceful exit does not wait for them.
        List<ProcessHandle> helpers = process.descendants().toList();
        try {
            if (process.isAlive() && !devTools.isClosed()) {
                devTools.sendAsync("Browser.close", null, null);
                process.waitFor(GRACEFUL_CLOSE_SECONDS, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            devTools.close();
            destroyTree(process, helpers, profileDir);
        }
    }

    /**
     * Kills the process and every descendant (renderers, zygotes), waiting a bounded time for each, then removes
     * what the killed browser left in TMPDIR through {@code profileDir} ({@link SingletonSocketDir}).
     */
    static void destroyTree(Process process, Path profileDir) {
        destroyTree(process, process.descendants().toList(), profileDir);
    }

    private static void destroyTree(Process process, List<ProcessHandle> helpers, Path profileDir) {
        List<ProcessHandle> all = new ArrayList<>(helpers);
        process.descendants().forEach(all::add);
        process.destroyForcibly();
        all.forEach(ProcessHandle::destroyForcibly);
        try {
            process.waitFor(GRACEFUL_CLOSE_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (ProcessHandle h : all) {
            h.onExit().completeOnTimeout(h, GRACEFUL_CLOSE_SECONDS, TimeUnit.SECONDS).join();
        }
        SingletonSocketDir.removeLeftover(profileDir, process);
    }
}
