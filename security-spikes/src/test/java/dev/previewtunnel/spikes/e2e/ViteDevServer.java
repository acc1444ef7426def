package dev.previewtunnel.spikes.e2e;

import dev.previewtunnel.spikes.lab.Processes;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;

/**
 * The real Vite dev server (pinned in {@code fixtures/vite-app/package.json}) serving the fixture app, started
 * exactly as a developer would: {@code vite --host 127.0.0.1 --port N --strictPort}, no config file, nothing
 * changed for the tunnel. It serves a copy of the app in {@code target/}, so editing a source file never touches
 * the committed fixture.
 */
public final class ViteDevServer implements AutoCloseable {
    private static final String VALUE_UPDATE_LINE = "hmr update /src/value.js";
    static final String VALUE_FILE = "src/value.js";
    public static final String INITIAL_VALUE = "initial-value";

    private final Process process;
    private final Path root;
    private final Path log;
    private final int port;

    private ViteDevServer(Process process, Path root, Path log, int port) {
        this.process = process;
        this.root = root;
        this.log = log;
        this.port = port;
    }

    public static Path moduleDir() {
        return Path.of(System.getProperty("basedir", System.getProperty("user.dir")));
    }

    public static Path fixtureDir() {
        return moduleDir().resolve("fixtures").resolve("vite-app");
    }

    /** Vite 8 needs Node 20.19+ or 22.12+: Debian 12's own nodejs (18) is too old. */
    static final String NODE_HINT = "Node.js >= 20.19 for Vite 8, which comes with the machine image;"
            + " see .ci/run and .ci/ensure-node";

    /** {@code npm ci} in the fixture when Vite is not installed yet (.ci/run does it up front). */
    public static Path ensureInstalled() {
        Processes.require("node", NODE_HINT);
        Path fixture = fixtureDir();
        Path vite = fixture.resolve("node_modules/vite/bin/vite.js");
        if (!Files.exists(vite)) {
            Path npm = Processes.require("npm", "apt-get install npm");
            Processes.runOk(List.of(npm.toString(), "ci", "--no-audit", "--no-fund"), fixture, Duration.ofMinutes(5));
        }
        if (!Files.exists(vite)) {
            throw new AssertionError("npm ci did not install " + vite);
        }
        return vite;
    }

    public static String version() {
        try {
            String pkg = Files.readString(fixtureDir().resolve("node_modules/vite/package.json"));
            return SpikeResult.JSON.readTree(pkg).path("version").asText();
        } catch (IOException e) {
            return "unknown";
        }
    }

    public static ViteDevServer start() {
        Path vite = ensureInstalled();
        Path node = Processes.require("node", NODE_HINT);
        Path root = copyApp();
        AssertionError last = null;
        for (int attempt = 0; attempt < 3; attempt++) {
            int port = Processes.freePort();
            Path log = root.resolve("vite-" + port + ".log");
            Process p = Processes.start(Processes.builder(List.of(node.toString(), vite.toString(), root.toString(),
                    "--host", "127.0.0.1", "--port", String.valueOf(port), "--strictPort"), log)
                    .directory(root.toFile()));
            try {
                Processes.awaitPort("127.0.0.1", port, Duration.ofSeconds(60), p, log);
                SpikeReport.environment("vite", version());
                return new ViteDevServer(p, root, log, port);
            } catch (AssertionError e) {
                Processes.destroyTree(p);
                last = e; // most likely the port was taken in between: try another
            }
        }
        Processes.deleteTree(root);
        throw last;
    }

    private static Path copyApp() {
        try {
            Path target = moduleDir().resolve("target");
            Files.createDirectories(target);
            Path root = Files.createTempDirectory(target, "vite-root-");
            Path fixture = fixtureDir();
            for (String f : List.of("index.html", "package.json")) {
                Files.copy(fixture.resolve(f), root.resolve(f));
            }
            Path src = fixture.resolve("src");
            try (Stream<Path> files = Files.walk(src)) {
                for (Path p : (Iterable<Path>) files::iterator) {
                    Path dst = root.resolve("src").resolve(src.relativize(p).toString());
                    if (Files.isDirectory(p)) {
                        Files.createDirectories(dst);
                    } else {
                        Files.copy(p, dst, StandardCopyOption.REPLACE_EXISTING);
                    }
                }
            }
            return root;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public int port() {
        return port;
    }

    public String logTail() {
        return Processes.tail(log, 3000);
    }

    /**
     * How many HMR updates of src/value.js Vite has logged ("hmr update /src/value.js", one per update it sent to
     * its clients): tells a save Vite's file watcher reported from one it did not.
     */
    public int valueUpdatesLogged() {
        // Without its colour codes: Vite colours its log when CI is set, even into a file.
        String logged = Processes.tail(log, Integer.MAX_VALUE).replaceAll("\u001B\\[[;\\d]*m", "");
        int n = 0;
        for (int i = logged.indexOf(VALUE_UPDATE_LINE); i >= 0; i = logged.indexOf(VALUE_UPDATE_LINE, i + 1)) {
            n++;
        }
        return n;
    }

    /** Rewrites the exported VALUE in src/value.js on disk, as an editor would save it. */
    public void writeValue(String value) {
        Path file = root.resolve(VALUE_FILE);
        try {
            String src = Files.readString(file, StandardCharsets.UTF_8);
            String updated = src.replaceFirst("export const VALUE = '[^']*';", "export const VALUE = '" + value + "';");
            if (updated.equals(src) && !src.contains("'" + value + "'")) {
                throw new AssertionError("VALUE line not found in " + file);
            }
            Files.writeString(file, updated, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close() {
        Processes.destroyTree(process);
        Processes.deleteTree(root);
    }
}
