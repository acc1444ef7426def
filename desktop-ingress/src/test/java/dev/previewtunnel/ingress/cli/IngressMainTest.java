package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.InProcessCli.Result;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;

import static dev.previewtunnel.ingress.cli.IngressCliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class IngressMainTest {

    @Test
    void versionNamesTheProjectVersionAndTheTunnelProtocol() {
        for (String[] args : new String[][] {{"--version"}, {"run", "--version"}}) {
            Result r = run(args);
            assertEquals(0, r.exitCode(), r::toString);
            assertNotEquals("unknown", IngressVersionProvider.projectVersion(), "version.properties is filtered");
            assertEquals(List.of("desktop-ingress " + IngressVersionProvider.projectVersion()
                    + " (tunnel protocol ptun.v1)"), r.outLines());
        }
    }

    @Test
    void topLevelHelpNamesTheCommandTheExitCodesAndTheSecretRule() {
        Result r = run("--help");
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals("", r.err());
        String out = r.out().replaceAll("\\s+", " ");
        for (String word : List.of("Usage: desktop-ingress", "run", "session", "grant", "status", "doctor", "Exit codes:", "3 refused", "never travel in a URL",
                "--token-file", "--grant-file", "ps", "desktop-ingress: <reason>")) {
            assertTrue(out.contains(word), () -> word + " missing from:\n" + r.out());
        }
    }

    @Test
    void runHelpDocumentsTheFileFormsAsRecommendedAndTheDefaults() {
        Result r = run("run", "--help");
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals("", r.err());
        assertTrue(r.out().startsWith("Usage: desktop-ingress run"), r.out());
        String out = r.out().replaceAll("\\s+", " ");
        for (String text : List.of("--token-file=FILE", "--grant-file=FILE", "(recommended)", "Recommended form",
                "visible to every local user in ps", "one per line", "never in a URL", "(default: 127.0.0.1:0)",
                "(default: 2)", "(default: default)", "loopback", "rw-------", "session-ID.credentials.json",
                "Exit codes:", "502")) {
            assertTrue(out.contains(text), () -> text + " missing from:\n" + r.out());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"open", "ports", "run", "session", "session create", "session list", "session close",
            "session rotate", "grant", "grant add", "grant remove", "status", "doctor", "help"})
    void everyCommandHasHelpWithExitCodes(String command) {
        Result r = run((command + " --help").split(" "));
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals("", r.err());
        assertTrue(r.out().startsWith("Usage: desktop-ingress " + command), r.out());
        assertTrue(r.out().contains("Exit codes:") && r.out().contains("2  cannot bind"), r.out());
    }

    @Test
    void noCommandOrAnUnknownOneIsAOneLineUsageError() {
        for (String[] args : new String[][] {{}, {"frobnicate"}, {"--bogus"}, {"run"}}) {
            Result r = run(args);
            assertTrue(r.usageError().endsWith("--help')"), r::toString);
        }
        assertTrue(run("run", "--gateway", "ws://x/", "--sesion-id", "a").err().contains("did you mean --session-id"));
    }

    @Test
    void completionPrintsAScriptNamingEveryCommand() {
        for (String shell : List.of("bash", "zsh")) {
            Result r = run("completion", shell);
            assertEquals(0, r.exitCode(), r::toString);
            assertTrue(r.out().contains("complete -F _complete_desktop-ingress"), r.out());
            for (String word : List.of("open", "ports", "run", "session", "grant", "status", "doctor", "--state-dir")) {
                assertTrue(r.out().contains(word), () -> word + " missing from the " + shell + " script");
            }
        }
    }
}
