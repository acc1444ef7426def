package dev.previewtunnel.grants;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.security.PublicKey;
import java.time.Clock;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * {@link VerificationKeys} that follow {@code verify-keys.jwks.json} on disk, so a long-running
 * gateway accepts grants from a rotated key without a restart.
 *
 * <p>At most once per second (by the given clock) a lookup stats the file; only if its modification
 * time, size or file identity changed is it re-read. File identity matters because rotation replaces
 * the file by rename, which may land within the same mtime tick on coarse-grained filesystems.
 * If a re-read fails (bad content, file missing) the last good keys stay in use and the problem is
 * reported by {@link #lastReloadProblem()}: refusing every grant because of a typo would be an outage.
 */
public final class ReloadingVerificationKeys implements VerificationKeysSource {
    static final long CHECK_INTERVAL_MILLIS = 1000;

    private final Path jwksFile;
    private final Clock clock;
    private volatile VerificationKeys current;
    private volatile Stamp stamp;
    private volatile long nextCheckAtMillis;
    private volatile String lastReloadProblem;

    private record Stamp(FileTime modified, long size, Object fileKey) {
    }

    /** Loads the file now; a file that cannot be loaded at start-up is an error. */
    public ReloadingVerificationKeys(Path jwksFile, Clock clock) throws IOException {
        this.jwksFile = Objects.requireNonNull(jwksFile, "jwksFile");
        this.clock = Objects.requireNonNull(clock, "clock");
        this.stamp = stamp(jwksFile);
        this.current = VerificationKeys.load(jwksFile);
        this.nextCheckAtMillis = clock.millis() + CHECK_INTERVAL_MILLIS;
    }

    @Override
    public Optional<PublicKey> find(String kid) {
        maybeReload();
        return current.find(kid);
    }

    /** The keys currently in use (after a possible reload). */
    public VerificationKeys current() {
        maybeReload();
        return current;
    }

    public Set<String> kids() {
        return current().kids();
    }

    /** Why the most recent reload attempt failed, or empty if it succeeded (or none was needed). */
    public Optional<String> lastReloadProblem() {
        return Optional.ofNullable(lastReloadProblem);
    }

    private void maybeReload() {
        long now = clock.millis();
        if (now < nextCheckAtMillis) return; // the cheap path: one volatile read and a compare
        synchronized (this) {
            if (now < nextCheckAtMillis) return;
            nextCheckAtMillis = now + CHECK_INTERVAL_MILLIS;
            try {
                Stamp seen = stamp(jwksFile);
                if (seen.equals(stamp)) return;
                current = VerificationKeys.load(jwksFile);
                stamp = seen;
                lastReloadProblem = null;
            } catch (IOException | RuntimeException e) {
                lastReloadProblem = "could not reload " + jwksFile + ": " + e.getMessage();
            }
        }
    }

    private static Stamp stamp(Path file) throws IOException {
        BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
        return new Stamp(a.lastModifiedTime(), a.size(), a.fileKey());
    }
}
