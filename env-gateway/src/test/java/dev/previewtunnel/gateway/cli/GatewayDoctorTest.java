package dev.previewtunnel.gateway.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.gateway.cli.CliHarness.RunningServe;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static dev.previewtunnel.gateway.cli.CliHarness.run;
import static dev.previewtunnel.cli.InProcessCli.assertNoSecrets;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code env-gateway doctor}: a healthy setup is all ok (exit 0); each usual misconfiguration is caught by its own
 * check, with its own message saying what to do, and the right exit code. Doctor changes nothing.
 */
class GatewayDoctorTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;
    Path keys;

    @BeforeEach
    void initKeys() {
        keys = tmp.resolve("keys");
        assertEquals(0, run("keys", "init", "--dir", keys.toString()).exitCode());
    }

    /** The checks of one --json run: check name to its lines (status + message). */
    private static Map<String, List<JsonNode>> checks(Result r) throws Exception {
        Map<String, List<JsonNode>> byName = new HashMap<>();
        for (String line : r.outLines()) {
            JsonNode n = JSON.readTree(line);
            byName.computeIfAbsent(n.get("check").asText(), k -> new ArrayList<>()).add(n);
        }
        return byName;
    }

    private static JsonNode only(Map<String, List<JsonNode>> checks, String name) {
        List<JsonNode> list = checks.get(name);
        assertNotNull(list, () -> "no " + name + " check in " + checks);
        assertEquals(1, list.size(), list::toString);
        return list.get(0);
    }

    private static String failure(Map<String, List<JsonNode>> checks, String name) {
        JsonNode n = only(checks, name);
        assertEquals("fail", n.get("status").asText(), n::toString);
        return n.get("message").asText();
    }

    @Test
    void aHealthySetupIsAllOk() throws Exception {
        try (ServerSocket target = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            String token = run("token", "issue", "--keys", keys.toString(), "--env", "dev1").outLines().get(0);
            String grant = run("grant", "issue", "--keys", keys.toString(), "--env", "dev1", "--session", "s",
                    "--target", "localhost:" + target.getLocalPort()).outLines().get(0);
            Path tokenFile = Files.writeString(tmp.resolve("token"), token + "\n");
            Path grantFile = Files.writeString(tmp.resolve("grant"), grant + "\n");
            Result r = run("doctor", "--keys", keys.toString(), "--env", "dev1", "--listen", "127.0.0.1:0",
                    "--target", "localhost:" + target.getLocalPort(), "--token-file", tokenFile.toString(),
                    "--grant-file", grantFile.toString());
            assertEquals(0, r.exitCode(), r::toString);
            for (String check : List.of("keys-dir", "signing-key", "verify-keys", "clock", "env", "listen", "target",
                    "token", "grant")) {
                assertTrue(r.out().lines().anyMatch(l -> l.startsWith("ok    " + check + " ")),
                        () -> check + " not ok in:\n" + r.out());
            }
            assertTrue(r.out().contains("everything checked is fine"), r::toString);
            assertNoSecrets(r.out(), r.err(), token, grant); // nor any piece of one
        }
    }

    @Test
    void aMissingKeyDirectory() throws Exception {
        Path missing = tmp.resolve("nope");
        Result r = run("doctor", "--json", "--keys", missing.toString(), "--env", "dev1", "--listen", "127.0.0.1:0");
        assertEquals(3, r.exitCode(), r::toString);
        String m = failure(checks(r), "keys-dir");
        assertTrue(m.contains("does not exist") && m.contains("env-gateway keys init --dir " + missing), m);
        assertFalse(Files.exists(missing), "doctor creates nothing");
    }

    @Test
    void aSigningKeyReadableByOthers() throws Exception {
        Path signing = keys.resolve("signing-key.jwk.json");
        Files.setPosixFilePermissions(signing, PosixFilePermissions.fromString("rw-r--r--"));
        Result r = run("doctor", "--json", "--keys", keys.toString(), "--env", "dev1", "--listen", "127.0.0.1:0");
        assertEquals(3, r.exitCode(), r::toString);
        String m = failure(checks(r), "signing-key");
        assertTrue(m.contains("readable by group/others (rw-r--r--)") && m.contains("chmod 600 " + signing)
                && m.contains("keys rotate"), m);
        assertEquals("rw-r--r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(signing)),
                "doctor fixes nothing itself");
    }

    @Test
    void verifyKeysThatDoNotParse() throws Exception {
        Files.writeString(keys.resolve("verify-keys.jwks.json"), "{\"keys\": [ {\"kty\": \"RSA\"");
        Result r = run("doctor", "--json", "--keys", keys.toString(), "--env", "dev1", "--listen", "127.0.0.1:0");
        assertEquals(3, r.exitCode(), r::toString);
        assertTrue(failure(checks(r), "verify-keys").contains("does not parse as a JWK Set"), r::toString);
    }

    @Test
    void aTargetThatIsNotListeningAndOneThePolicyRefuses() throws Exception {
        int closed;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            closed = s.getLocalPort();
        }
        Result r = run("doctor", "--json", "--keys", keys.toString(), "--env", "dev1", "--listen", "127.0.0.1:0",
                "--target", "127.0.0.1:" + closed, "--target", "10.1.2.3:80");
        assertEquals(2, r.exitCode(), r::toString);
        List<JsonNode> targets = checks(r).get("target");
        assertEquals(2, targets.size(), targets::toString);
        String notListening = targets.get(0).get("message").asText();
        assertTrue(notListening.startsWith("nothing listens on 127.0.0.1:" + closed)
                && notListening.contains("start the dev server"), notListening);
        String policy = targets.get(1).get("message").asText();
        assertTrue(policy.contains("refused by the target policy (policy_") && policy.contains("--allow-target"), policy);
    }

    @Test
    void aListenPortTakenByAnotherProgramAndOneTakenByTheGateway() throws Exception {
        try (ServerSocket other = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            // Something that accepts and never speaks HTTP.
            Result r = run("doctor", "--json", "--keys", keys.toString(), "--env", "dev1", "--listen",
                    "127.0.0.1:" + other.getLocalPort());
            assertEquals(2, r.exitCode(), r::toString);
            String m = failure(checks(r), "listen");
            assertTrue(m.contains("is in use by another program") && m.contains("ss -ltnp"), m);
        }
        RunningServe serve = RunningServe.start("serve", "--keys", keys.toString(), "--env", "dev1", "--listen",
                "127.0.0.1:0");
        try {
            int port = serve.command.server().address().getPort();
            Result r = run("doctor", "--json", "--keys", keys.toString(), "--env", "dev1", "--listen",
                    "127.0.0.1:" + port);
            assertEquals(0, r.exitCode(), r::toString);
            JsonNode listen = only(checks(r), "listen");
            assertEquals("ok", listen.get("status").asText());
            assertTrue(listen.get("message").asText().contains("gateway is already listening"), listen::toString);
        } finally {
            serve.close();
        }
    }

    @Test
    void aTokenForAnotherEnvironmentAndAMissingSetting() throws Exception {
        String token = run("token", "issue", "--keys", keys.toString(), "--env", "other").outLines().get(0);
        Path tokenFile = Files.writeString(tmp.resolve("token"), token + "\n");
        Result r = run("doctor", "--json", "--keys", keys.toString(), "--env", "dev1", "--token-file",
                tokenFile.toString());
        assertEquals(1, r.exitCode(), "the first failure is the missing listen address (usage): " + r);
        Map<String, List<JsonNode>> checks = checks(r);
        assertTrue(failure(checks, "listen").contains("no listen address set"), r::toString);
        String m = failure(checks, "token");
        assertTrue(m.contains("does not verify (grant_wrong_environment)") && m.contains("--env dev1"), m);
        assertNoSecrets(r.out(), r.err(), token);
    }

    @Test
    void aClockThatJumpedBack() throws Exception {
        Files.setLastModifiedTime(keys.resolve("verify-keys.jwks.json"),
                FileTime.from(Instant.now().plus(Duration.ofDays(2))));
        Result r = run("doctor", "--json", "--keys", keys.toString(), "--env", "dev1", "--listen", "127.0.0.1:0");
        assertEquals(3, r.exitCode(), r::toString);
        assertTrue(failure(checks(r), "clock").contains("the clock jumped back"), r::toString);
    }

    @Test
    void everyMisconfigurationHasItsOwnMessage() throws Exception {
        // The messages of the failures above are pairwise distinct: each says what is wrong and what to do.
        Path missing = tmp.resolve("nope");
        List<String> messages = new ArrayList<>();
        messages.add(failure(checks(run("doctor", "--json", "--keys", missing.toString(), "--env", "e",
                "--listen", "127.0.0.1:0")), "keys-dir"));
        Path shared = tmp.resolve("shared");
        run("keys", "init", "--dir", shared.toString());
        Files.setPosixFilePermissions(shared.resolve("signing-key.jwk.json"), PosixFilePermissions.fromString("rw-r-----"));
        messages.add(failure(checks(run("doctor", "--json", "--keys", shared.toString(), "--env", "e", "--listen",
                "127.0.0.1:0")), "signing-key"));
        messages.add(failure(checks(run("doctor", "--json", "--keys", keys.toString(), "--env", "e")), "listen"));
        messages.add(failure(checks(run("doctor", "--json", "--keys", keys.toString(), "--env", "e", "--listen",
                "127.0.0.1:0", "--target", "127.0.0.1:1")), "target"));
        Files.writeString(keys.resolve("verify-keys.jwks.json"), "[]");
        messages.add(failure(checks(run("doctor", "--json", "--keys", keys.toString(), "--env", "e", "--listen",
                "127.0.0.1:0")), "verify-keys"));
        assertEquals(messages.size(), messages.stream().distinct().count(), messages::toString);
    }
}
