package dev.previewtunnel.ingress.session;


import dev.previewtunnel.json.JsonTrees;
import dev.previewtunnel.local.files.OwnerOnlyFiles;

import java.io.IOException;
import java.nio.file.Path;

/**
 * The desktop's state files (session credentials, the control API's address and token), all written through
 * {@link OwnerOnlyFiles}.
 */
public final class StateFiles {

    private StateFiles() {
    }

    /** {@code $XDG_STATE_HOME/preview-tunnel}, else {@code ~/.local/state/preview-tunnel}. */
    public static Path defaultDirectory() {
        String xdg = System.getenv("XDG_STATE_HOME");
        Path base = xdg != null && !xdg.isBlank() ? Path.of(xdg)
                : Path.of(System.getProperty("user.home"), ".local", "state");
        return base.resolve("preview-tunnel");
    }

    public static void ensureDirectory(Path dir) throws IOException {
        OwnerOnlyFiles.ensureDirectory(dir);
    }

    public static void writeOwnerOnly(Path file, String content) throws IOException {
        OwnerOnlyFiles.write(file, content);
    }

    /** Writes {@code {"username":...,"password":...}} for a session; returns the file. */
    public static Path writeCredentials(Path dir, BrowserSession session) throws IOException {
        Path file = dir.resolve("session-" + session.id() + ".credentials.json");
        writeOwnerOnly(file, JsonTrees.write(JsonTrees.object().put("username", session.username())
                .put("password", session.password())) + "\n");
        return file;
    }

    public static Path credentialsFile(Path dir, String sessionId) {
        return dir.resolve("session-" + sessionId + ".credentials.json");
    }
}
