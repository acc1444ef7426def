package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.InProcessCli.Result;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;

import static dev.previewtunnel.gateway.cli.CliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GatewayMainTest {

    @Test
    void versionNamesTheProjectVersionAndTheTunnelProtocol() {
        Result r = run("--version");
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals(1, r.outLines().size(), r::toString);
        String line = r.outLines().get(0);
        assertTrue(line.contains("ptun.v1"), line);
        assertTrue(line.matches("env-gateway \\S+ \\(tunnel protocol ptun\\.v1\\)"), line);
        assertNotEquals("unknown", GatewayVersionProvider.projectVersion(), "version.properties is filtered by the build");
        assertEquals("env-gateway " + GatewayVersionProvider.projectVersion() + " (tunnel protocol ptun.v1)", line);
    }

    @Test
    void topLevelHelpMentionsEverySubcommandAndTheExitCodes() {
        Result r = run("--help");
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals("", r.err());
        for (String word : List.of("keys", "grant", "token", "serve", "revoke", "doctor", "Exit codes:", "never in a URL",
                "should live minutes")) {
            assertTrue(r.out().contains(word), () -> word + " missing from:\n" + r.out());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"keys", "keys init", "keys rotate", "grant", "grant issue", "token", "token issue",
            "serve", "revoke", "doctor"})
    void everyCommandHasHelpWithExitCodes(String command) {
        String[] args = (command + " --help").split(" ");
        Result r = run(args);
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals("", r.err());
        assertTrue(r.out().startsWith("Usage: env-gateway " + command), r.out());
        assertTrue(r.out().contains("Exit codes:"), r.out());
        assertTrue(r.out().contains("3  refused"), r.out());
    }

    @Test
    void helpTextsStateDefaultsAndTheSecretHandlingRules() {
        String grant = run("grant", "issue", "--help").out();
        assertTrue(grant.contains("(default: 10m)"), grant);
        assertTrue(grant.contains("(default: tcp)"), grant);
        assertTrue(grant.contains("should live minutes"), grant);
        assertTrue(grant.contains("never in a URL"), grant);
        String token = run("token", "issue", "--help").out();
        assertTrue(token.contains("(default: 12h)"), token);
        assertTrue(token.contains("Authorization: Bearer"), token);
        assertTrue(token.contains("never") && token.contains("URL"), token);
        String serve = run("serve", "--help").out().replaceAll("\\s+", " ");
        for (String d : List.of("(default: /tunnel)", "(default: 5s)", "(default: 10s)", "(default: 15m)",
                "(default: loopback only)", "(default: no TLS)")) {
            assertTrue(serve.contains(d), () -> d + " missing from:\n" + serve);
        }
    }

    @Test
    void noCommandOrAnUnknownOneIsAOneLineUsageError() {
        for (String[] args : new String[][] {{}, {"frobnicate"}, {"--bogus"}, {"token"}}) {
            Result r = run(args);
            assertEquals(1, r.exitCode(), r::toString);
            assertEquals("", r.out(), r::toString);
            assertTrue(r.cliErrorLine().endsWith("--help')"), r::toString);
        }
    }

    @Test
    void completionPrintsAScriptNamingEveryCommand() {
        for (String shell : List.of("bash", "zsh")) {
            Result r = run("completion", shell);
            assertEquals(0, r.exitCode(), r::toString);
            assertTrue(r.out().contains("complete -F _complete_env-gateway"), r.out());
            for (String word : List.of("keys", "grant", "token", "serve", "revoke", "doctor", "ports", "--admin-listen")) {
                assertTrue(r.out().contains(word), () -> word + " missing from the " + shell + " script");
            }
        }
    }
}
