package dev.previewtunnel.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;

/** What the run's JSON says about the machine (from /proc and /etc), and its load average. */
final class MachineInfo {
    private MachineInfo() {
    }

    static Map<String, Object> machine() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("nproc", Runtime.getRuntime().availableProcessors());
        m.put("cpu", firstMatch(Path.of("/proc/cpuinfo"), "model name", l -> l.replaceAll("^[^:]*:\\s*", "")));
        m.put("memTotal", firstMatch(Path.of("/proc/meminfo"), "MemTotal", l -> l.replaceAll("^[^:]*:\\s*", "")));
        m.put("kernel", read(Path.of("/proc/sys/kernel/osrelease")));
        m.put("os", firstMatch(Path.of("/etc/os-release"), "PRETTY_NAME", l -> l.replaceAll("^[^=]*=\"?|\"$", "")));
        m.put("jdk", System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"));
        return m;
    }

    /** /proc/loadavg as it reads. */
    static String loadAverageLine() {
        return read(Path.of("/proc/loadavg"));
    }

    static double loadAverage() {
        try {
            return Double.parseDouble(loadAverageLine().split("\\s+")[0]);
        } catch (RuntimeException e) {
            return 0;
        }
    }

    /** Waits (at most {@code seconds}) until the 1-minute load average falls below 1. */
    static void waitIdle(long seconds, PrintStream out) throws InterruptedException {
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        boolean said = false;
        while (loadAverage() >= 1.0 && System.nanoTime() < deadline) {
            if (!said) {
                RunLog.log(out, "waiting up to " + seconds + " s for the machine to go quiet (load " + loadAverage()
                        + ")");
                said = true;
            }
            Thread.sleep(5_000);
        }
    }

    private static String firstMatch(Path file, String prefix, Function<String, String> f) {
        try {
            return Files.readAllLines(file).stream().filter(l -> l.startsWith(prefix)).findFirst().map(f)
                    .orElse("?");
        } catch (IOException e) {
            return "?";
        }
    }

    private static String read(Path file) {
        try {
            // readAllLines, not readString: /proc/sys files report a size that readString trusts.
            return String.join(" ", Files.readAllLines(file)).strip();
        } catch (IOException e) {
            return "?";
        }
    }
}
