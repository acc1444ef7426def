package dev.previewtunnel.mux.local;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Runs a main of the test class path in a child JVM with given flags, for what this JVM settled long ago. */
final class ChildJvm {
    private ChildJvm() {
    }

    /**
     * The last line the child printed on stdout; fails unless it exits 0 within 30 s. Its stdout goes to a file,
     * not a pipe, so that a hung child is killed at the bound instead of blocking a read.
     */
    static String lastLine(List<String> flags, Class<?> main) throws Exception {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        command.addAll(flags);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
        Path stdout = Files.createTempFile("child-jvm", ".out");
        try {
            Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD)
                    .redirectOutput(stdout.toFile()).start();
            boolean ended = p.waitFor(30, TimeUnit.SECONDS);
            if (!ended) {
                p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
            String out = Files.readString(stdout, StandardCharsets.UTF_8);
            assertTrue(ended, "child JVM did not end within 30 s; its stdout: " + out);
            assertEquals(0, p.exitValue(), out);
            // the test class path's logback may log Netty's start-up on stdout first: the answer is the last line
            List<String> lines = out.lines().toList();
            return lines.isEmpty() ? "" : lines.get(lines.size() - 1).strip();
        } finally {
            Files.deleteIfExists(stdout);
        }
    }
}
