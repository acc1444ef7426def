package dev.previewtunnel.ingress.status;

import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The last refusals of each browser session, for its status page: at most {@link #PER_SESSION} per session, the
 * oldest dropped first, so a page that keeps failing cannot grow it. Only sessions that authenticated are recorded
 * (an unauthenticated local process cannot add sessions), and a closed session's entries are dropped by
 * {@link #forget}. Written from any event loop.
 */
public final class RecentErrors {
    public static final int PER_SESSION = 20;

    /** One refusal: when, for which authority, its code, and what happened in words (never exception text). */
    public record Entry(Instant at, String authority, String code, String words) {
    }

    private final Map<String, Deque<Entry>> bySession = new ConcurrentHashMap<>();

    public void record(String sessionId, Entry entry) {
        Deque<Entry> ring = bySession.computeIfAbsent(sessionId, id -> new ArrayDeque<>(PER_SESSION));
        synchronized (ring) {
            if (ring.size() == PER_SESSION) {
                ring.removeFirst();
            }
            ring.addLast(entry);
        }
    }

    /** Newest first. */
    public List<Entry> of(String sessionId) {
        Deque<Entry> ring = bySession.get(sessionId);
        if (ring == null) {
            return List.of();
        }
        synchronized (ring) {
            List<Entry> out = new ArrayList<>(ring);
            java.util.Collections.reverse(out);
            return out;
        }
    }

    public void forget(String sessionId) {
        bySession.remove(sessionId);
    }
}
