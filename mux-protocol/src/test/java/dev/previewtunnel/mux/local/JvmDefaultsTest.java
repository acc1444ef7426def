package dev.previewtunnel.mux.local;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What doctor prints of a running JVM, read in child JVMs started with the flags that choose each answer. */
class JvmDefaultsTest {
    @ParameterizedTest
    @CsvSource({"-XX:TieredStopAtLevel=1, C1 only", "-XX:+TieredCompilation, C1 and C2",
            "-XX:-TieredCompilation, C2 only"})
    void theCompilerFollowsTheFlagsThatChooseIt(String flag, String expected) throws Exception {
        String line = describeIn(List.of("-XX:+UseSerialGC", "-Xmx32m", flag));
        assertTrue(line.matches("max heap \\d+ MiB, max direct memory \\d+ MiB, collector Serial, compiler "
                + expected), line);
    }

    @Test
    void theIngressRunsTheGatewaysFlagsAndC1Only() throws Exception {
        assertEquals(JvmDefaults.GATEWAY_FLAGS, JvmDefaults.INGRESS_FLAGS.subList(0, JvmDefaults.GATEWAY_FLAGS.size()));
        assertTrue(describeIn(JvmDefaults.INGRESS_FLAGS).endsWith(", compiler C1 only"));
        assertTrue(describeIn(JvmDefaults.GATEWAY_FLAGS).endsWith(", compiler C1 and C2"));
    }

    private static String describeIn(List<String> flags) throws Exception {
        List<String> command = new java.util.ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        command.addAll(flags);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), Describe.class.getName()));
        Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "child JVM did not end");
        assertEquals(0, p.exitValue(), out);
        // the test class path's logback may log Netty's start-up on stdout first: the answer is the last line
        List<String> lines = out.lines().toList();
        return lines.isEmpty() ? "" : lines.get(lines.size() - 1).strip();
    }

    /** The child: prints {@link JvmDefaults#describeRunning()}. */
    public static final class Describe {
        public static void main(String[] args) {
            System.out.println(JvmDefaults.describeRunning());
        }
    }
}
