package dev.previewtunnel.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/** Percentiles and medians over samples, and rounding for the results. */
final class Stats {
    private Stats() {
    }

    /** Nearest-rank percentile of {@code values} (copied, then sorted); NaN for none. */
    static double percentile(long[] values, double p) {
        if (values.length == 0) {
            return Double.NaN;
        }
        long[] v = values.clone();
        Arrays.sort(v);
        int rank = (int) Math.ceil(p / 100.0 * v.length);
        return v[Math.max(0, Math.min(v.length - 1, rank - 1))];
    }

    static double percentile(double[] values, double p) {
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] v = values.clone();
        Arrays.sort(v);
        int rank = (int) Math.ceil(p / 100.0 * v.length);
        return v[Math.max(0, Math.min(v.length - 1, rank - 1))];
    }

    static double median(double[] values) {
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] v = values.clone();
        Arrays.sort(v);
        int n = v.length;
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }

    static double min(double[] values) {
        return Arrays.stream(values).min().orElse(Double.NaN);
    }

    static double max(double[] values) {
        return Arrays.stream(values).max().orElse(Double.NaN);
    }

    static double sum(double[] values) {
        return Arrays.stream(values).sum();
    }

    /** {@code v} rounded to {@code decimals} places (NaN and infinities as they are). */
    static double round(double v, int decimals) {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            return v;
        }
        double f = Math.pow(10, decimals);
        return Math.round(v * f) / f;
    }

    static List<Double> rounded(double[] v, int decimals) {
        List<Double> out = new ArrayList<>();
        for (double d : v) {
            out.add(round(d, decimals));
        }
        return out;
    }

    /**
     * p50, p90, p99 and max of nanosecond samples, divided by {@code nanosPerUnit} and rounded, under keys
     * {@code p50<unit>}, {@code p90<unit>}, {@code p99<unit>} and {@code max<Unit>} (as in {@code maxUs}).
     */
    static void putPercentiles(Map<String, Object> out, long[] nanos, double nanosPerUnit, String unit,
                               int decimals) {
        for (int p : new int[]{50, 90, 99}) {
            out.put("p" + p + unit, round(percentile(nanos, p) / nanosPerUnit, decimals));
        }
        String capitalized = Character.toUpperCase(unit.charAt(0)) + unit.substring(1);
        out.put("max" + capitalized, round(percentile(nanos, 100) / nanosPerUnit, decimals));
    }
}
