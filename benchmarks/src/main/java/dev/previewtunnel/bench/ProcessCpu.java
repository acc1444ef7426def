package dev.previewtunnel.bench;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * CPU the path's own processes (gateway + ingress, or sshd + ssh) spend per unit of work, measured after the
 * warm-up: unlike times, it hardly depends on what else the machine is doing.
 */
final class ProcessCpu {
    private final MemWatch mem;
    private final long[] start;

    ProcessCpu(MemWatch mem) {
        this.mem = mem;
        this.start = mem == null ? null : mem.cpuMillis();
    }

    void put(Map<String, Object> out, String key, double units) {
        if (mem == null) {
            return;
        }
        long[] end = mem.cpuMillis();
        Map<String, Object> cpu = new LinkedHashMap<>();
        cpu.put("env", Stats.round((end[0] - start[0]) / units, 1));
        cpu.put("desk", Stats.round((end[1] - start[1]) / units, 1));
        cpu.put("sum", Stats.round((end[0] - start[0] + end[1] - start[1]) / units, 1));
        out.put(key, cpu);
    }
}
