package dev.previewtunnel.bench;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Figures 1-3 over several rounds: what the table and the targets then read. */
class RoundsTest {

    private static Map<String, Object> bulk(double down, long reps, double envCpu, List<Double> runs) {
        Map<String, Object> cpu = new LinkedHashMap<>(Map.of("env", envCpu));
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("downloadGbps", down);
        m.put("bytesPerRep", reps);
        m.put("cpuMsPerGiBDownload", cpu);
        m.put("downloadRunsGbps", runs);
        m.put("note", "round with " + down);
        return m;
    }

    private static Map<String, Object> path(String figure, Map<String, Object> values) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put(figure, values);
        return r;
    }

    @Test
    void anOddCountGivesTheMiddleMeasuredValueOfEveryNumberNestedOrNot() {
        Map<String, Object> m = Rounds.median(List.of(bulk(5.0, 7L, 1400, List.of(5.0)),
                bulk(3.0, 7L, 1000, List.of(3.0)), bulk(4.0, 7L, 1600, List.of(4.0))));
        assertEquals(4.0, m.get("downloadGbps"));
        assertEquals(7L, m.get("bytesPerRep"), "an integer stays the integer measured");
        assertEquals(1400.0, Table.num(m, "cpuMsPerGiBDownload.env"), "each value on its own, not one round's");
        assertEquals(List.of(5.0, 3.0, 4.0), m.get("downloadRunsGbps"), "lists joined in round order");
        assertEquals("round with 4.0", m.get("note"), "anything else as in the last round");
    }

    @Test
    void anEvenCountGivesTheMeanOfTheTwoMiddleValues() {
        Map<String, Object> m = Rounds.median(List.of(bulk(5.0, 7L, 1, List.of()), bulk(2.0, 7L, 1, List.of()),
                bulk(3.0, 7L, 1, List.of()), bulk(9.0, 7L, 1, List.of())));
        assertEquals(4.0, m.get("downloadGbps"));
    }

    @Test
    void theLastRoundsFiguresBecomeMediansAndEveryRoundIsKept() {
        Map<String, Map<String, Object>> results = new LinkedHashMap<>();
        Map<String, Object> ws = path("bulk", bulk(6.0, 1L, 900, List.of(6.0)));
        Map<String, Object> concurrent = new LinkedHashMap<>(Map.of("aggregateGbps", 4.0));
        ws.put("concurrent", concurrent);
        results.put("ws", ws);
        Map<String, Object> firstBulk = bulk(2.0, 1L, 1100, List.of(2.0));
        Map<String, Object> secondBulk = bulk(4.0, 1L, 1000, List.of(4.0));
        List<Map<String, Map<String, Object>>> earlier = new ArrayList<>();
        earlier.add(Map.of("ws", path("bulk", firstBulk)));
        earlier.add(Map.of("ws", path("bulk", secondBulk)));

        Rounds.merge(results, earlier);

        assertEquals(4.0, Table.num(ws, "bulk.downloadGbps"));
        assertEquals(1000.0, Table.num(ws, "bulk.cpuMsPerGiBDownload.env"));
        assertEquals(3.0, Table.num(ws, "bulk.roundsMeasured"));
        assertSame(concurrent, ws.get("concurrent"), "figures 4-6 are the last round's alone");
        assertEquals(2.0, Table.roundValue(results, "ws", 0, "bulk.downloadGbps"));
        assertEquals(4.0, Table.roundValue(results, "ws", 1, "bulk.downloadGbps"));
        assertEquals(6.0, Table.roundValue(results, "ws", 2, "bulk.downloadGbps"), "the last round comes last");
        assertTrue(Double.isNaN(Table.roundValue(results, "ws", 3, "bulk.downloadGbps")));
        assertTrue(Double.isNaN(Table.roundValue(results, "dt", 0, "bulk.downloadGbps")));
    }

    @Test
    void aRoundThatFailedOrMissedThePathIsLeftOutOfTheMedian() {
        Map<String, Map<String, Object>> results = new LinkedHashMap<>();
        Map<String, Object> dt = path("open", new LinkedHashMap<>(Map.of("p50ms", 0.9)));
        results.put("dt", dt);
        List<Map<String, Map<String, Object>>> earlier = new ArrayList<>();
        earlier.add(Map.of("dt", path("open", new LinkedHashMap<>(Map.of("error", "refused")))));
        earlier.add(Map.of()); // the path failed to start in that round
        earlier.add(Map.of("dt", path("open", new LinkedHashMap<>(Map.of("p50ms", 0.7)))));

        Rounds.merge(results, earlier);

        assertEquals(0.8, Table.num(dt, "open.p50ms"), "the two measured rounds only");
        assertEquals(2.0, Table.num(dt, "open.roundsMeasured"));
        assertTrue(Double.isNaN(Table.roundValue(results, "dt", 0, "open.p50ms")));
        assertTrue(Double.isNaN(Table.roundValue(results, "dt", 1, "open.p50ms")));
        assertEquals(0.7, Table.roundValue(results, "dt", 2, "open.p50ms"));
    }

    @Test
    void aPathThatFailedItsLastRoundKeepsItsEarlierRoundsAndSaysSo() {
        Map<String, Map<String, Object>> results = new LinkedHashMap<>();
        results.put("ws", path("open", new LinkedHashMap<>(Map.of("p50ms", 1.0))));
        List<Map<String, Map<String, Object>>> earlier = new ArrayList<>();
        earlier.add(Map.of("dt", path("open", new LinkedHashMap<>(Map.of("p50ms", 0.6)))));
        earlier.add(Map.of("dt", path("open", new LinkedHashMap<>(Map.of("p50ms", 0.8)))));

        Rounds.merge(results, earlier);

        Map<String, Object> dt = results.get("dt");
        assertTrue(String.valueOf(dt.get("error")).contains("not measured in the last round"), String.valueOf(dt));
        assertEquals(0.7, Table.num(dt, "open.p50ms"));
        assertEquals(0.8, Table.roundValue(results, "dt", 1, "open.p50ms"));
        assertTrue(Double.isNaN(Table.roundValue(results, "dt", 2, "open.p50ms")), "its last round measured nothing");
    }

    @Test
    void notANumberIsLeftOutOfTheMedian() {
        Map<String, Object> m = Rounds.median(List.of(new LinkedHashMap<>(Map.of("p50ms", 1.0)),
                new LinkedHashMap<>(Map.of("p50ms", Double.NaN)), new LinkedHashMap<>(Map.of("p50ms", 3.0))));
        assertEquals(2.0, m.get("p50ms"), "the two numbers' median, not the NaN sorted last");
        Map<String, Object> none = Rounds.median(List.of(new LinkedHashMap<>(Map.of("p50ms", Double.NaN))));
        assertTrue(Double.isNaN((Double) none.get("p50ms")));
    }

    @Test
    void theTablePrintsEachRoundWithItsOwnRatiosOnlyWhenThereWereRounds() {
        Map<String, Map<String, Object>> results = new LinkedHashMap<>();
        results.put("dt", path("bulk", new LinkedHashMap<>(Map.of("downloadGbps", 4.0))));
        results.put("ws", path("bulk", new LinkedHashMap<>(Map.of("downloadGbps", 6.0))));
        assertFalse(print(results).contains("1-3 per round"), "one round: no such section");

        List<Map<String, Map<String, Object>>> earlier = new ArrayList<>();
        earlier.add(Map.of("dt", path("bulk", new LinkedHashMap<>(Map.of("downloadGbps", 2.0))),
                "ws", path("bulk", new LinkedHashMap<>(Map.of("downloadGbps", 5.0)))));
        Rounds.merge(results, earlier);
        String table = print(results);

        assertTrue(table.contains("1-3 per round"), table);
        String round1 = table.lines().filter(l -> l.contains("download, round 1")).findFirst().orElseThrow();
        String round2 = table.lines().filter(l -> l.contains("download, round 2")).findFirst().orElseThrow();
        // dt, dt-aes, ws, wss, mux, mux-tls, mux-proxy, ws-floor (the floors, none here), then ws/dt
        assertTrue(round1.matches(".*2\\.00 +- +5\\.00 +- +- +- +- +- +2\\.50x.*"), round1);
        assertTrue(round2.matches(".*4\\.00 +- +6\\.00 +- +- +- +- +- +1\\.50x.*"), round2);
        assertFalse(table.contains("open p50, round 1"), "no rows for a figure no round measured: " + table);
    }

    private static String print(Map<String, Map<String, Object>> results) {
        java.io.ByteArrayOutputStream buf = new java.io.ByteArrayOutputStream();
        Config c = new Config();
        c.rounds = 2;
        try (java.io.PrintStream out = new java.io.PrintStream(buf, true, java.nio.charset.StandardCharsets.UTF_8)) {
            Table.print(out, results, Map.of(), List.of(), Map.of(), c);
        }
        return buf.toString(java.nio.charset.StandardCharsets.UTF_8);
    }

    @Test
    void oneRoundChangesNothing() {
        Map<String, Map<String, Object>> results = new LinkedHashMap<>();
        Map<String, Object> bulk = bulk(6.0, 1L, 900, List.of(6.0));
        results.put("ws", path("bulk", bulk));
        Rounds.merge(results, List.of());
        assertSame(bulk, results.get("ws").get("bulk"));
        assertFalse(results.get("ws").containsKey("rounds"));
    }

    @Test
    void roundsAreAnOptionOfTheFullRunAndOneInASmokeRun() {
        assertEquals(3, Config.parse(new String[]{"--root", "."}).rounds);
        assertEquals(2, Config.parse(new String[]{"--smoke", "--root", "."}).rounds);
        assertEquals(5, Config.parse(new String[]{"--rounds", "5", "--root", "."}).rounds);
        assertThrows(IllegalArgumentException.class, () -> Config.parse(new String[]{"--rounds", "0", "--root", "."}));
        assertTrue(Config.usage().contains("--rounds N"));
    }
}
