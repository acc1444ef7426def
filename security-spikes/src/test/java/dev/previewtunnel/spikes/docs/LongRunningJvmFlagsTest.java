package dev.previewtunnel.spikes.docs;

import dev.previewtunnel.mux.local.FatalErrors;
import dev.previewtunnel.mux.local.JvmDefaults;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The long-running commands' JVM options ({@link JvmDefaults}, issue 21) are the same everywhere they are spelled
 * out: dist's build-image.sh (the package launchers, which the systemd units run), RemoteInstall (the gateway
 * that {@code open} starts on an SSH host), every documented {@code java ... -jar JAR serve|run|open} line, and
 * docs/operations.md's "Memory and JVM defaults". The benchmark's default uses the constants themselves.
 * {@code serve} has the gateway's flags, {@code run} and {@code open} the ingress's (the same and C1 only).
 */
class LongRunningJvmFlagsTest {
    private static final String GATEWAY = String.join(" ", JvmDefaults.GATEWAY_FLAGS);
    private static final String INGRESS = String.join(" ", JvmDefaults.INGRESS_FLAGS);
    /** A documented command that starts serve, run or open from a jar: "java [OPTIONS] -jar JAR COMMAND". */
    private static final Pattern JAVA_LINE = Pattern.compile("\\bjava ((?:\\S+ )*?)-jar \\S+ (serve|run|open)\\b");

    @Test
    void theConstantsHoldTheFatalErrorFlagAndTheMemoryOptions() {
        assertTrue(JvmDefaults.GATEWAY_FLAGS.containsAll(FatalErrors.JVM_FLAGS), GATEWAY);
        assertEquals(FatalErrors.JVM_FLAGS.size() + JvmDefaults.MEMORY_OPTIONS.split(" ").length,
                JvmDefaults.GATEWAY_FLAGS.size(), GATEWAY);
        assertEquals(INGRESS, GATEWAY + " " + JvmDefaults.INGRESS_COMPILER_OPTIONS);
    }

    @Test
    void thePackageLaunchersRunServeRunAndOpenWithThem() {
        String script = DocsFiles.read(Path.of("dist", "src", "main", "packaging", "build-image.sh"));
        // FatalErrors' flags go to every launcher through the .cfg's java-options ...
        Matcher common = Pattern.compile("(?m)^common='([^']*)'").matcher(script);
        assertTrue(common.find(), "build-image.sh: no common='...' line");
        for (String flag : FatalErrors.JVM_FLAGS) {
            assertTrue(List.of(common.group(1).split(" ")).contains(flag), "build-image.sh common= lacks " + flag);
        }
        // ... the memory options to the long-running commands only, C1 only to the desktop side's, and the user's
        // options after both.
        assertTrue(script.contains("\n  memory='" + JvmDefaults.MEMORY_OPTIONS + "'\n"),
                "build-image.sh must set memory='" + JvmDefaults.MEMORY_OPTIONS + "'");
        assertTrue(script.contains("\n  ingress_compiler='" + JvmDefaults.INGRESS_COMPILER_OPTIONS + "'\n"),
                "build-image.sh must set ingress_compiler='" + JvmDefaults.INGRESS_COMPILER_OPTIONS + "'");
        assertTrue(script.contains("\n  long=$memory\n  if [ \"$name\" = desktop-ingress ]; then "
                + "long=\"$memory $ingress_compiler\"; fi\n"), "build-image.sh: long= for each launcher");
        assertTrue(script.contains("serve|run|open|\"\") short=\"'\"$long\"'\" ;;"),
                "build-image.sh: the serve|run|open case must set short to $long");
        assertTrue(script.contains("\\$short $opts \\${" + JvmDefaults.OPTIONS_ENV + ":-} -cp"),
                "build-image.sh: the launcher's exec line must append $" + JvmDefaults.OPTIONS_ENV + " last");
    }

    @Test
    void theRemoteGatewayRunsWithThem() throws Exception {
        Class<?> install = Class.forName("dev.previewtunnel.ingress.ssh.RemoteInstall");
        Field f = install.getDeclaredField("REMOTE_JVM_FLAGS");
        f.setAccessible(true);
        @SuppressWarnings("unchecked")
        List<String> remote = (List<String>) f.get(null);
        assertEquals(JvmDefaults.GATEWAY_FLAGS, remote.subList(0, JvmDefaults.GATEWAY_FLAGS.size()));
        // docs/desktop-ingress.md shows the remote's java line (wrapped over lines)
        String doc = DocsFiles.read(Path.of("docs", "desktop-ingress.md")).replaceAll("\\s+", " ");
        assertTrue(doc.contains("java " + String.join(" ", remote) + " -jar"),
                "docs/desktop-ingress.md must show the remote gateway's line: java " + String.join(" ", remote));
    }

    @Test
    void everyDocumentedJavaLineOfServeRunOrOpenCarriesThem() {
        List<String> wrong = new ArrayList<>();
        int seen = 0;
        for (Path doc : DocsFiles.all()) {
            if (doc.endsWith("performance.md")) {
                continue; // findings quote the command lines of their time
            }
            List<String> lines = DocsFiles.read(doc).lines().toList();
            for (int i = 0; i < lines.size(); i++) {
                Matcher m = JAVA_LINE.matcher(lines.get(i));
                if (!m.find() || refusedAtStartup(lines, i)) {
                    continue;
                }
                seen++;
                // only -D system properties may come before them (docs/operations.md's -Dptun.transport=nio)
                String options = m.group(1).replaceAll("-D\\S+ ", "").strip();
                if (!options.equals(m.group(2).equals("serve") ? GATEWAY : INGRESS)) {
                    wrong.add(doc + ":" + (i + 1) + ": '" + m.group() + "'");
                }
            }
        }
        assertEquals(List.of(), wrong, "java lines of serve must pass exactly " + GATEWAY + ", of run and open "
                + INGRESS);
        assertTrue(seen >= 8, "found only " + seen + " java lines of serve/run/open; has the pattern gone stale?");
        String section = DocsFiles.section(Path.of("docs", "operations.md"), "## Memory and JVM defaults");
        for (String flags : List.of(GATEWAY, INGRESS)) {
            assertTrue(section.contains("\n" + flags + "\n"), "docs/operations.md's Memory and JVM defaults must "
                    + "show " + flags);
        }
        for (String flag : JvmDefaults.INGRESS_FLAGS) {
            assertTrue(section.contains("| `" + flag + "` |"), "docs/operations.md's table lacks a row for " + flag);
        }
    }

    /** An example that the program refuses before it starts (its output line, or a "# exit N", says so). */
    private static boolean refusedAtStartup(List<String> lines, int i) {
        String next = i + 1 < lines.size() ? lines.get(i + 1) : "";
        return lines.get(i).matches(".*#\\s*exit \\d+.*") || next.startsWith("env-gateway: ")
                || next.startsWith("desktop-ingress: ");
    }
}
