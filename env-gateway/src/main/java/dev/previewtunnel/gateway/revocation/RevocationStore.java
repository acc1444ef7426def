package dev.previewtunnel.gateway.revocation;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.cli.TrustedPaths;
import dev.previewtunnel.grants.RevocationList;
import dev.previewtunnel.json.JsonTrees;
import dev.previewtunnel.local.files.OwnerOnlyFiles;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.DateTimeException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The gateway's revocations on disk, {@code STATE_DIR/revocations.json}, so that a restart does not undo them.
 * Written whole on every revocation: temp file created owner-only, written, fsync-ed, moved over the old one
 * atomically, directory fsync-ed; a crash leaves the old list or the new one, never half of either. Read back
 * strictly: a file that is not exactly what this class writes (or is open to other users) refuses the start
 * rather than silently forgetting revocations.
 *
 * <pre>{"version":1,"revocations":[{"kind":"id"|"session","id":"...","revokedAt":"2030-01-01T12:00:00Z"},...]}</pre>
 */
public final class RevocationStore {
    public static final String FILE = "revocations.json";
    /** Longest id the admin endpoint accepts and the file may hold (jti and session ids are far shorter). */
    public static final int MAX_ID_LENGTH = 256;
    /** Far above what the largest list allowed (--max-revocations) needs; refuses a runaway file. */
    static final long MAX_FILE_BYTES = 64L << 20;


    private final Path file;
    private final List<RevocationList.Entry> restored;

    private RevocationStore(Path file, List<RevocationList.Entry> restored) {
        this.file = file;
        this.restored = restored;
    }

    /**
     * Opens the store of {@code stateDir} (created rwx------ if missing; refused if another user owns it or may
     * write it) and reads what it holds; a missing file is an empty list. Any problem is an IOException whose
     * message is one line naming the file, never its content.
     */
    public static RevocationStore open(Path stateDir) throws IOException {
        OwnerOnlyFiles.ensureDirectory(stateDir);
        TrustedPaths.requireTrustedDirectory(stateDir, "state directory");
        Path file = stateDir.resolve(FILE);
        if (!Files.exists(file)) {
            return new RevocationStore(file, List.of());
        }
        TrustedPaths.requireOwnerOnlyFile(file, "revocation file");
        if (Files.size(file) > MAX_FILE_BYTES) {
            throw new IOException("revocation file " + file + " is larger than " + (MAX_FILE_BYTES >> 20) + " MiB");
        }
        return new RevocationStore(file, parse(file, Files.readAllBytes(file)));
    }

    public Path file() {
        return file;
    }

    /** What the file held when opened. */
    public List<RevocationList.Entry> restored() {
        return restored;
    }

    /**
     * Writes the list {@code entries} gives, atomically and durably. Synchronized so that concurrent revocations
     * write in turn, each snapshot taken under the lock (the last write holds every revocation made so far).
     * Blocks on disk: never call it from an event loop that carries tunnel traffic.
     */
    public synchronized void save(Supplier<List<RevocationList.Entry>> entries) throws IOException {
        OwnerOnlyFiles.writeDurably(file, render(entries.get()));
    }

    static byte[] render(List<RevocationList.Entry> entries) {
        ObjectNode root = JsonTrees.object().put("version", 1);
        ArrayNode list = root.putArray("revocations");
        for (RevocationList.Entry e : entries) {
            list.addObject().put("kind", e.kind() == RevocationList.Kind.ID ? "id" : "session")
                    .put("id", e.id()).put("revokedAt", e.revokedAt().toString());
        }
        return (JsonTrees.write(root) + "\n").getBytes(StandardCharsets.UTF_8);
    }

    /** Strict parse: exactly the shape {@link #render} writes; otherwise an IOException naming the file only. */
    static List<RevocationList.Entry> parse(Path file, byte[] content) throws IOException {
        JsonNode root;
        try {
            root = JsonTrees.parseStrict(content);
        } catch (IOException e) { // Jackson's message may quote the content
            throw corrupt(file, "not valid JSON");
        }
        if (root == null || !root.isObject() || !fieldsAre(root, Set.of("version", "revocations"))) {
            throw corrupt(file, "not a revocation list");
        }
        if (!root.get("version").isInt() || root.get("version").intValue() != 1) {
            throw corrupt(file, "unknown version");
        }
        JsonNode list = root.get("revocations");
        if (!list.isArray()) {
            throw corrupt(file, "revocations is not a list");
        }
        List<RevocationList.Entry> out = new ArrayList<>(list.size());
        for (JsonNode n : list) {
            if (!n.isObject() || !fieldsAre(n, Set.of("kind", "id", "revokedAt"))) {
                throw corrupt(file, "entry " + out.size() + " is malformed");
            }
            String kind = n.get("kind").isTextual() ? n.get("kind").textValue() : "";
            String id = n.get("id").isTextual() ? n.get("id").textValue() : "";
            if (!("id".equals(kind) || "session".equals(kind)) || !validId(id) || !n.get("revokedAt").isTextual()) {
                throw corrupt(file, "entry " + out.size() + " is malformed");
            }
            Instant at;
            try {
                at = Instant.parse(n.get("revokedAt").textValue());
            } catch (DateTimeException e) {
                throw corrupt(file, "entry " + out.size() + " has an invalid time");
            }
            out.add(new RevocationList.Entry("id".equals(kind) ? RevocationList.Kind.ID : RevocationList.Kind.SESSION,
                    id, at));
        }
        return List.copyOf(out);
    }

    /** Non-blank, at most {@link #MAX_ID_LENGTH} printable ASCII characters: what the admin endpoint accepts. */
    public static boolean validId(String id) {
        return id != null && !id.isBlank() && id.length() <= MAX_ID_LENGTH
                && id.chars().allMatch(c -> c > 0x20 && c < 0x7f);
    }

    private static boolean fieldsAre(JsonNode node, Set<String> names) {
        int count = 0;
        for (Iterator<String> it = node.fieldNames(); it.hasNext(); count++) {
            if (!names.contains(it.next())) {
                return false;
            }
        }
        return count == names.size();
    }

    private static IOException corrupt(Path file, String why) {
        return new IOException("revocation file " + file + " is corrupt (" + why + "); the gateway will not start "
                + "without its revocations: restore it from a backup, or delete it to drop every revocation");
    }
}
