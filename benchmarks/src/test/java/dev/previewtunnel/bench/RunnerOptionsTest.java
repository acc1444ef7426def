package dev.previewtunnel.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The runner's JVM options and its report of a server process that never got ready. */
class RunnerOptionsTest {

    @Test
    void blankJvmOptionsAddNothing() {
        Config c = Config.parse(new String[]{"--gateway-jvm", "", "--ingress-jvm", "  ", "--root", "."});
        // An empty argument before -jar would be taken by java for the main class: the server would not start.
        assertEquals(List.of(), c.gatewayJvmExtra);
        assertEquals(List.of(), c.ingressJvmExtra);
    }

    @Test
    void jvmOptionsAreSplitAtWhitespace() {
        Config c = Config.parse(new String[]{"--server-jvm", " -Xmx64m \t-Da=1  ", "--gateway-jvm", "-Db=2",
                "--root", "."});
        assertEquals(List.of("-Xmx64m", "-Da=1"), c.serverJvmOptions);
        assertEquals(List.of("-Db=2"), c.gatewayJvmExtra);
    }

    @Test
    void aServerThatExitsIsReportedAsExitedNotAsSlow(@TempDir Path dir) {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Proc proc = Proc.start("no-main-class", List.of(java, ""), dir, node -> true);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> proc.awaitReady(Duration.ofSeconds(60)));
        assertTrue(e.getMessage().startsWith("no-main-class exited before it was ready"), e.getMessage());
        // The log's tail says why: java's own complaint.
        assertTrue(e.getMessage().contains("main class"), e.getMessage());
    }
}
