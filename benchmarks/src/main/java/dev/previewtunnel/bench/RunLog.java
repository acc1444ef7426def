package dev.previewtunnel.bench;

import java.io.PrintStream;
import java.time.LocalTime;

/** The runner's progress lines, time-stamped and flushed as they happen. */
final class RunLog {
    private RunLog() {
    }

    static void step(PrintStream out, Route route, String what) {
        log(out, "  " + route.label + ": " + what);
    }

    static void log(PrintStream out, String line) {
        out.println("[bench " + LocalTime.now().withNano(0) + "] " + line);
        out.flush();
    }
}
