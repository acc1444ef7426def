package dev.previewtunnel.ingress.ssh;

import com.fasterxml.jackson.databind.JsonNode;

import dev.previewtunnel.json.JsonTrees;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * A child's output stream drained on a thread of its own into the last {@code capacity} bytes (what an error line
 * quotes) and, when given, an owner-only log file that is rotated to {@code FILE.1} past {@code fileLimit} bytes: a
 * chatty or hostile remote costs bounded memory and disk, and a child never blocks on a full pipe.
 */
final class OutputTail {
    private static final long FILE_LIMIT = 1 << 20;

    private final byte[] ring;
    private final Path file;
    private long total;
    private OutputStream log;
    private long logged;
    private final java.util.concurrent.CompletableFuture<Void> done = new java.util.concurrent.CompletableFuture<>();

    OutputTail(int capacity, Path file) {
        this.ring = new byte[capacity];
        this.file = file;
    }

    /** Starts a daemon thread copying {@code in} here until its end. */
    void drain(InputStream in, String threadName) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[8192];
            try (in) {
                for (int n; (n = in.read(buf)) >= 0; ) {
                    append(buf, n);
                }
            } catch (IOException ignored) {
                // the process is gone; what arrived is kept
            } finally {
                closeLog();
                done.complete(null);
            }
        }, threadName);
        t.setDaemon(true);
        t.start();
    }

    /** Completes when the drained stream has ended. */
    java.util.concurrent.CompletableFuture<Void> done() {
        return done;
    }

    synchronized void append(byte[] buf, int n) {
        for (int i = 0; i < n; i++) {
            ring[(int) (total++ % ring.length)] = buf[i];
        }
        if (file != null) {
            writeLog(buf, n);
        }
    }

    /** Everything kept, oldest first, as text. */
    synchronized String text() {
        int kept = (int) Math.min(total, ring.length);
        byte[] out = new byte[kept];
        long start = total - kept;
        for (int i = 0; i < kept; i++) {
            out[i] = ring[(int) ((start + i) % ring.length)];
        }
        return new String(out, StandardCharsets.UTF_8);
    }

    /** The last non-empty lines, joined by " / ", at most {@code chars} characters, control characters dropped. */
    String lastLines(int chars) {
        String[] lines = text().split("\r?\n");
        StringBuilder sb = new StringBuilder();
        for (int i = lines.length - 1; i >= 0; i--) {
            String line = readable(lines[i]).replaceAll("\\p{Cntrl}", "").strip();
            if (line.isEmpty() || line.startsWith("Warning: Permanently added")) {
                continue; // ssh's note on a host key accepted with accept-new: never the reason anything failed
            }
            if (sb.length() + line.length() + 3 > chars) {
                if (sb.length() == 0) {
                    sb.append(line, Math.max(0, line.length() - chars), line.length());
                }
                break;
            }
            sb.insert(0, sb.length() == 0 ? line : line + " / ");
        }
        return sb.toString();
    }

    /** A JSON log line (the gateway's logback encoder) reads as its level and message; other lines as they are. */
    static String readable(String line) {
        if (!line.startsWith("{")) {
            return line;
        }
        try {
            JsonNode node = JsonTrees.parse(line);
            JsonNode message = node.get("formattedMessage");
            return message == null ? line : node.path("level").asText("") + " " + message.asText();
        } catch (IOException e) {
            return line;
        }
    }

    private void writeLog(byte[] buf, int n) {
        try {
            if (log == null || logged + n > FILE_LIMIT) {
                closeLog();
                if (logged + n > FILE_LIMIT && Files.exists(file)) {
                    Files.move(file, file.resolveSibling(file.getFileName() + ".1"),
                            StandardCopyOption.REPLACE_EXISTING);
                }
                if (!Files.exists(file)) {
                    Files.createFile(file, PosixFilePermissions.asFileAttribute(
                            PosixFilePermissions.fromString("rw-------")));
                }
                log = Files.newOutputStream(file, StandardOpenOption.APPEND);
                logged = Files.size(file);
            }
            log.write(buf, 0, n);
            log.flush();
            logged += n;
        } catch (IOException e) {
            closeLog();
        }
    }

    private synchronized void closeLog() {
        if (log != null) {
            try {
                log.close();
            } catch (IOException ignored) {
                // nothing more to write
            }
            log = null;
        }
    }
}
