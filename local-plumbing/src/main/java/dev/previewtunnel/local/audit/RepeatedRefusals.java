package dev.previewtunnel.local.audit;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Audit lines for refusals a peer can repeat at will: the first refusal of a kind (event plus key fields, e.g.
 * token, code, detail) is written in full; repeats within {@link #WINDOW} are only counted, and written as one
 * summary line with {@code "repeated": N} when the window ends (then a new window starts while repeats go on). At
 * most {@link #MAX_KINDS} kinds are tracked; repeats of further kinds are counted under one overflow kind, so a
 * flood costs bounded memory and about one line per kind per window. Used by both sides through
 * {@link AuditLog#refused}; the owner calls {@link #flush} every second and at close. Thread-safe.
 */
public final class RepeatedRefusals {
    public static final Duration WINDOW = Duration.ofSeconds(10);
    public static final int MAX_KINDS = 1024;
    private static final List<String> OVERFLOW = List.of("kind", "other");

    private final AuditLog audit;
    private final Map<Kind, long[]> counts = new LinkedHashMap<>(); // kind -> {repeats, window start nanos}

    private record Kind(String event, List<String> keyFields) {
    }

    public RepeatedRefusals(AuditLog audit) {
        this.audit = audit;
    }

    /**
     * Writes the line ({@code keyFields} as name/value pairs, then {@code details}) if it is the first of its kind
     * in the current window; otherwise counts it for the window's summary line.
     */
    public void refused(String event, Consumer<AuditLog.Event> details, String... keyFields) {
        Kind kind = new Kind(event, List.of(keyFields));
        synchronized (this) {
            long[] seen = counts.get(kind);
            if (seen == null && counts.size() >= MAX_KINDS) {
                kind = new Kind(event, OVERFLOW);
                seen = counts.computeIfAbsent(kind, k -> new long[] {0, System.nanoTime()});
            }
            if (seen != null) {
                seen[0]++;
                return;
            }
            counts.put(kind, new long[] {0, System.nanoTime()});
        }
        AuditLog.Event line = audit.event(event);
        putAll(line, kind.keyFields());
        details.accept(line);
        line.write();
    }

    /** Writes the summaries of windows that ended (all of them when {@code all}), forgets kinds no longer seen. */
    public void flush(boolean all) {
        long now = System.nanoTime();
        List<Map.Entry<Kind, Long>> summaries = new ArrayList<>();
        synchronized (this) {
            for (Iterator<Map.Entry<Kind, long[]>> it = counts.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<Kind, long[]> e = it.next();
                long[] seen = e.getValue();
                if (!all && now - seen[1] < WINDOW.toNanos()) {
                    continue;
                }
                if (seen[0] == 0) {
                    it.remove(); // nothing repeated in this window: the next one is a first again
                    continue;
                }
                summaries.add(Map.entry(e.getKey(), seen[0]));
                seen[0] = 0;
                seen[1] = now;
            }
        }
        for (Map.Entry<Kind, Long> s : summaries) {
            AuditLog.Event line = audit.event(s.getKey().event());
            putAll(line, s.getKey().keyFields());
            line.put("repeated", s.getValue()).put("windowSeconds", WINDOW.toSeconds()).write();
        }
    }

    public synchronized int trackedKinds() {
        return counts.size();
    }

    private static void putAll(AuditLog.Event line, List<String> pairs) {
        for (int i = 0; i + 1 < pairs.size(); i += 2) {
            line.put(pairs.get(i), pairs.get(i + 1));
        }
    }
}
