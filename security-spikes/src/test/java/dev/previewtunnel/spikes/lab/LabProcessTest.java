package dev.previewtunnel.spikes.lab;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LabProcessTest {
    @Test
    void aServerThatExitsIsReportedAsExitedNotAsSlow(@TempDir Path dir) {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        LabProcess proc = LabProcess.start("no-main-class", List.of(java, ""), dir, node -> true);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> proc.awaitReady(Duration.ofSeconds(60)));
        assertTrue(e.getMessage().startsWith("no-main-class exited before it was ready"), e.getMessage());
        // The log's tail says why: java's own complaint.
        assertTrue(e.getMessage().contains("main class"), e.getMessage());
    }
}
