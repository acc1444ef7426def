package dev.previewtunnel.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Figures 1-3 (bulk, ping-pong, stream open) measured in several rounds, every path in turn in each round and
 * started afresh for it, and reported as the median of each value over the rounds (issue 21's own table was
 * "medians of three interleaved rounds"). On this shared 2-vCPU machine one pass of these figures moved by 30% and
 * more from run to run, and the verdicts against the peer flipped with it (docs/performance.md "Noise", runs 3-6);
 * interleaving puts what drifts during a run on every path alike. The memory and many-stream figures (4-6) and the
 * page loads run once: their phases depend on each other's order, and the page loads interleave on their own.
 */
final class Rounds {
    /** The figures measured in every round, by their keys in a path's results. */
    static final List<String> FIGURES = List.of("bulk", "pingpong", "open");

    private Rounds() {
    }

    /**
     * Replaces figures 1-3 of each path in {@code results} (the last round's, measured with every figure) by the
     * median over that round and the {@code earlier} ones, and keeps every round's own values under
     * {@code rounds} (a list, first round first) so that the spread stays visible. A figure that failed in a round
     * (its map holds {@code error}) is left out of the median; the failure is already in the run's failures. A
     * path that failed its last round keeps the medians of its earlier rounds, and says so under {@code error}.
     */
    static void merge(Map<String, Map<String, Object>> results, List<Map<String, Map<String, Object>>> earlier) {
        if (earlier.isEmpty()) {
            return;
        }
        for (String path : BenchRunner.ORDER) {
            if (!results.containsKey(path) && earlier.stream().anyMatch(round -> round.containsKey(path))) {
                Map<String, Object> failed = new LinkedHashMap<>();
                failed.put("error", "not measured in the last round (see failures): figures 1-3 are the earlier "
                        + "rounds' alone");
                results.put(path, failed);
            }
        }
        for (Map.Entry<String, Map<String, Object>> path : results.entrySet()) {
            Map<String, Object> last = path.getValue();
            List<Map<String, Object>> rounds = new ArrayList<>();
            for (Map<String, Map<String, Object>> round : earlier) {
                rounds.add(round.getOrDefault(path.getKey(), Map.of()));
            }
            Map<String, Object> lastRound = new LinkedHashMap<>();
            for (String figure : FIGURES) {
                if (last.containsKey(figure)) {
                    lastRound.put(figure, last.get(figure));
                }
            }
            rounds.add(lastRound);
            for (String figure : FIGURES) {
                List<Map<String, Object>> measured = new ArrayList<>();
                for (Map<String, Object> round : rounds) {
                    if (round.get(figure) instanceof Map<?, ?> m && !m.containsKey("error")) {
                        @SuppressWarnings("unchecked")
                        Map<String, Object> values = (Map<String, Object>) m;
                        measured.add(values);
                    }
                }
                if (!measured.isEmpty()) {
                    Map<String, Object> median = median(measured);
                    median.put("roundsMeasured", measured.size());
                    last.put(figure, median);
                }
            }
            if (rounds.stream().anyMatch(round -> FIGURES.stream().anyMatch(round::containsKey))) {
                last.put("rounds", rounds);
            }
        }
    }

    /**
     * The element-wise median of maps of the same shape: numbers by their median (the middle one of an odd count,
     * so an actual measured value; the mean of the two middle ones of an even count; NaN and infinities left out),
     * nested maps likewise, lists joined in round order (e.g. every bulk repetition), anything else as in the last
     * map.
     */
    static Map<String, Object> median(List<Map<String, Object>> maps) {
        Map<String, Object> last = maps.get(maps.size() - 1);
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : last.entrySet()) {
            List<Object> values = new ArrayList<>();
            for (Map<String, Object> m : maps) {
                if (m.containsKey(e.getKey())) {
                    values.add(m.get(e.getKey()));
                }
            }
            out.put(e.getKey(), medianOf(values, e.getValue()));
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private static Object medianOf(List<Object> values, Object last) {
        if (values.stream().allMatch(v -> v instanceof Number)) {
            List<Object> finite = values.stream().filter(v -> Double.isFinite(((Number) v).doubleValue())).toList();
            if (finite.isEmpty()) {
                return last;
            }
            double[] d = finite.stream().mapToDouble(v -> ((Number) v).doubleValue()).toArray();
            return finite.size() % 2 == 1 ? medianValue(finite, Stats.median(d)) : Stats.round(Stats.median(d), 3);
        }
        if (values.stream().allMatch(v -> v instanceof Map)) {
            return median(values.stream().map(v -> (Map<String, Object>) v).toList());
        }
        if (values.stream().allMatch(v -> v instanceof List)) {
            List<Object> joined = new ArrayList<>();
            values.forEach(v -> joined.addAll((List<Object>) v));
            return joined;
        }
        return last;
    }

    /** The measured value (as it was, an integer staying an integer) whose number is the median. */
    private static Object medianValue(List<Object> values, double median) {
        return values.stream().filter(v -> ((Number) v).doubleValue() == median).findFirst().orElse(median);
    }
}
