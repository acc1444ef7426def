package dev.previewtunnel.mux.local;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What doctor prints of a running JVM, read in child JVMs started with the flags that choose each answer. */
class JvmDefaultsTest {
    @ParameterizedTest
    @CsvSource({"-XX:TieredStopAtLevel=1, C1 only", "-XX:+TieredCompilation, C1 and C2",
            "-XX:-TieredCompilation, C2 only", "-XX:CompilationMode=quick-only, C1 only",
            "-XX:CompilationMode=high-only, C2 only"})
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
        return ChildJvm.lastLine(flags, Describe.class);
    }

    /** The child: prints {@link JvmDefaults#describeRunning()}. */
    public static final class Describe {
        public static void main(String[] args) {
            System.out.println(JvmDefaults.describeRunning());
        }
    }
}
