package dev.previewtunnel.local.net;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;

/**
 * The process's open-file limit ({@code ulimit -n}, the soft limit), for {@link ConnectionBudget#clipToFdLimit}.
 * Read from {@code /proc/self/limits} where there is one: the JVM's OperatingSystemMXBean tells the same number,
 * but its first lookup loads the platform MBean machinery, ~2.6 MiB of an idle program's RSS that nothing else
 * on the run path uses (docs/performance.md, finding 42). Elsewhere the MXBean answers.
 */
final class DescriptorLimit {
    private static final Path PROC_LIMITS = Path.of("/proc/self/limits");
    private static final String MAX_OPEN_FILES = "Max open files";

    private DescriptorLimit() {
    }

    /** The soft limit, Long.MAX_VALUE when unlimited, or -1 where neither source tells. */
    static long current() {
        if (Files.isReadable(PROC_LIMITS)) {
            try {
                OptionalLong limit = fromProcLimits(Files.readAllLines(PROC_LIMITS, StandardCharsets.US_ASCII));
                if (limit.isPresent()) {
                    return limit.getAsLong();
                }
            } catch (IOException | RuntimeException e) { // an unreadable file: the MXBean below
            }
        }
        return fromMxBean();
    }

    /**
     * The soft limit on the "Max open files" row of a {@code /proc/<pid>/limits} table (columns: name, soft,
     * hard, units), or empty when the row is missing or its soft column is neither a number nor "unlimited".
     */
    static OptionalLong fromProcLimits(List<String> lines) {
        for (String line : lines) {
            if (!line.startsWith(MAX_OPEN_FILES)) {
                continue;
            }
            String[] columns = line.substring(MAX_OPEN_FILES.length()).trim().split("\\s+");
            if (columns[0].equals("unlimited")) {
                return OptionalLong.of(Long.MAX_VALUE);
            }
            try {
                long soft = Long.parseLong(columns[0]);
                return soft >= 0 ? OptionalLong.of(soft) : OptionalLong.empty();
            } catch (NumberFormatException e) {
                return OptionalLong.empty();
            }
        }
        return OptionalLong.empty();
    }

    static long fromMxBean() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.UnixOperatingSystemMXBean u) {
            return u.getMaxFileDescriptorCount();
        }
        return -1;
    }
}
