package dev.previewtunnel.ingress.cli;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The conventions checker can fail: each rule on a bad sample, and a clean exposition passes. */
class PromLintTest {
    private static List<String> lint(String exposition) {
        return PromLint.check(exposition, Set.of("jvm_gc_pause_seconds_max"));
    }

    private static void assertOneProblem(String exposition, String expected) {
        List<String> problems = lint(exposition);
        assertEquals(1, problems.size(), problems::toString);
        assertTrue(problems.get(0).contains(expected), problems::toString);
    }

    @Test
    void aCleanExpositionPasses() {
        assertEquals(List.of(), lint("""
                # HELP ptun_gateway_build_info always 1
                # TYPE ptun_gateway_build_info gauge
                ptun_gateway_build_info{commit="09eddf2abcde",protocol="ptun.v1",version="0.1.0"} 1.0
                # HELP ptun_gateway_dials_total TCP connects
                # TYPE ptun_gateway_dials_total counter
                ptun_gateway_dials_total 3.0
                # HELP ptun_gateway_stream_open_seconds open to answer
                # TYPE ptun_gateway_stream_open_seconds histogram
                ptun_gateway_stream_open_seconds_bucket{outcome="ok",le="0.001"} 0
                ptun_gateway_stream_open_seconds_bucket{outcome="ok",le="+Inf"} 1
                ptun_gateway_stream_open_seconds_count{outcome="ok"} 1
                ptun_gateway_stream_open_seconds_sum{outcome="ok"} 0.004
                # HELP jvm_gc_pause_seconds_max longest pause
                # TYPE jvm_gc_pause_seconds_max gauge
                jvm_gc_pause_seconds_max{action="end of minor GC",cause="G1 Evacuation Pause"} 0.002
                # HELP ptun_ingress_tunnel_disconnected_since_timestamp_seconds since when
                # TYPE ptun_ingress_tunnel_disconnected_since_timestamp_seconds gauge
                ptun_ingress_tunnel_disconnected_since_timestamp_seconds 0.0
                # HELP process_start_time_seconds start
                # TYPE process_start_time_seconds gauge
                process_start_time_seconds 1.7e9
                """));
    }

    @Test
    void eachRuleFailsOnABadSample() {
        assertOneProblem("# HELP ptun_x_dials counts\n# TYPE ptun_x_dials counter\nptun_x_dials 1\n", "ends in _total");
        assertOneProblem("# HELP ptun_x_live_total n\n# TYPE ptun_x_live_total gauge\nptun_x_live_total 1\n",
                "only counters end in _total");
        assertOneProblem("# HELP process_cpu_time_ns_total cpu\n# TYPE process_cpu_time_ns_total counter\n"
                + "process_cpu_time_ns_total 5\n", "unit abbreviation _ns");
        assertOneProblem("# HELP ptun_x_open_milliseconds t\n# TYPE ptun_x_open_milliseconds gauge\n"
                + "ptun_x_open_milliseconds 5\n", "base units: seconds, not milliseconds");
        assertOneProblem("# TYPE ptun_x_up gauge\nptun_x_up 1\n", "no HELP");
        assertOneProblem("# HELP ptun_x_up \n# TYPE ptun_x_up gauge\nptun_x_up 1\n", "no HELP");
        assertOneProblem("# HELP ptun_xUp up\n# TYPE ptun_xUp gauge\nptun_xUp 1\n", "not snake_case");
        assertOneProblem("# HELP ptun_x_up up\n# TYPE ptun_x_up gauge\nptun_x_up{peerState=\"a\"} 1\n",
                "label name not snake_case");
        assertOneProblem("# HELP tunnel_up up\n# TYPE tunnel_up gauge\ntunnel_up 1\n", "start with ptun_");
        assertOneProblem("# HELP ptun_x_build_info b\n# TYPE ptun_x_build_info gauge\n"
                + "ptun_x_build_info{version=\"1\"} 2.0\n", "must be 1");
        assertTrue(lint("# HELP ptun_x_build_info b\n# TYPE ptun_x_build_info counter\nptun_x_build_info 1\n")
                .contains("ptun_x_build_info: an _info metric is a gauge"));
        assertOneProblem("# HELP ptun_x_disconnected_since_seconds s\n# TYPE ptun_x_disconnected_since_seconds gauge\n"
                + "ptun_x_disconnected_since_seconds 0\n", "_timestamp_seconds");
        assertOneProblem("# HELP ptun_x_open_seconds_max m\n# TYPE ptun_x_open_seconds_max gauge\n"
                + "ptun_x_open_seconds_max 0.1\n", "rolling _max");
        assertOneProblem("# HELP ptun_x_open_count c\n# TYPE ptun_x_open_count gauge\nptun_x_open_count 1\n",
                "reserved for histograms");
        assertOneProblem("# HELP ptun_x_gauge g\n# TYPE ptun_x_gauge gauge\nptun_x_gauge 1\n", "metric type (gauge)");
        assertOneProblem("# HELP ptun_x_up u\n# TYPE ptun_x_up gauge\nptun_x_up{le=\"1\"} 1\n", "label le on a gauge");
        assertOneProblem("# HELP ptun_x_up u\n# TYPE ptun_x_up gauge\nptun_y_up 1\n", "without a TYPE");
    }
}
