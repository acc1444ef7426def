package dev.previewtunnel.gateway.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.grants.GrantException;
import dev.previewtunnel.grants.GrantFailure;
import dev.previewtunnel.grants.GrantVerifier;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.grants.VerifiedGrant;
import dev.previewtunnel.grants.VerifiedToken;
import dev.previewtunnel.grants.VerifierPolicy;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static dev.previewtunnel.gateway.cli.CliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class IssueCommandsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;
    Path keys;

    @BeforeEach
    void initKeys() {
        keys = tmp.resolve("keys");
        assertEquals(0, run("keys", "init", "--dir", keys.toString()).exitCode());
    }

    private GrantVerifier verifier() throws Exception {
        return new GrantVerifier(KeyDirectory.open(keys).verificationKeys(), Clock.systemUTC(),
                VerifierPolicy.defaults());
    }

    private String grantArgsOk(String... extra) {
        List<String> args = new ArrayList<>(List.of("grant", "issue", "--keys", keys.toString(), "--env", "env-1",
                "--session", "sess-1"));
        args.addAll(List.of(extra));
        Result r = run(args.toArray(String[]::new));
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals(1, r.outLines().size(), r::toString);
        return r.outLines().get(0);
    }

    @Test
    void grantIssuePrintsOneJwtLineThatVerifiesForTheTarget() throws Exception {
        Result r = run("grant", "issue", "--keys", keys.toString(), "--env", "env-1", "--session", "sess-1",
                "--target", "localhost:5173");

        assertEquals(0, r.exitCode(), r::toString);
        assertEquals(1, r.outLines().size(), r::toString);
        assertTrue(r.out().endsWith("\n"));
        assertEquals("", r.err(), "default ttl issues silently");
        String jwt = r.outLines().get(0);
        assertEquals(3, jwt.split("\\.", -1).length, "compact JWS");

        VerifiedGrant grant = verifier().verifyGrant(jwt, "env-1", "localhost:5173");
        assertEquals("sess-1", grant.session());
        assertEquals("localhost", grant.targetHost());
        assertEquals(5173, grant.targetPort());
        assertEquals("tcp", grant.protocol());
        assertNull(grant.provider());
        assertEquals(Duration.ofMinutes(10), Duration.between(grant.issuedAt(), grant.expiresAt()));

        GrantException other = assertThrows(GrantException.class,
                () -> verifier().verifyGrant(jwt, "env-1", "localhost:5174"));
        assertEquals(GrantFailure.WRONG_TARGET, other.failure());
    }

    @Test
    void grantIssueAcceptsBracketedIpv6AndOptionalClaims() throws Exception {
        String jwt = grantArgsOk("--target", "[::1]:5173", "--protocol", "http", "--provider", "claude",
                "--thread", "t-42", "--ttl", "90s");
        VerifiedGrant grant = verifier().verifyGrant(jwt, "env-1", "[::1]:5173");
        assertEquals("::1", grant.targetHost());
        assertEquals("http", grant.protocol());
        assertEquals("claude", grant.provider());
        assertEquals("t-42", grant.thread());
        assertEquals(Duration.ofSeconds(90), Duration.between(grant.issuedAt(), grant.expiresAt()));
    }

    @Test
    void nonsenseTargetIsAOneLineUsageError() {
        Result r = run("grant", "issue", "--keys", keys.toString(), "--env", "env-1", "--session", "s",
                "--target", "nonsense");
        assertEquals(1, r.exitCode(), r::toString);
        assertEquals("", r.out());
        String line = r.cliErrorLine();
        assertTrue(line.startsWith("env-gateway: --target must be HOST:PORT"), line);
        assertTrue(line.contains("(see 'env-gateway grant issue --help')"), line);
    }

    @Test
    void ttlOverTheDayCapIsAOneLineUsageError() {
        Result r = run("grant", "issue", "--keys", keys.toString(), "--env", "env-1", "--session", "s",
                "--target", "localhost:5173", "--ttl", "2d");
        assertEquals(1, r.exitCode(), r::toString);
        assertEquals("", r.out());
        assertTrue(r.cliErrorLine().contains("--ttl must be at most 24h"), r::toString);
    }

    @Test
    void otherBadArgumentsAreOneLineUsageErrors() {
        String k = keys.toString();
        String[][] cases = {
                {"grant", "issue", "--keys", k, "--env", "e", "--session", "s", "--target", "localhost:5173", "--ttl", "5M"},
                {"grant", "issue", "--keys", k, "--env", "e", "--session", "s", "--target", "localhost:5173", "--protocol", "ftp"},
                {"grant", "issue", "--keys", k, "--env", "e", "--session", "s", "--target", "localhost:0"},
                {"grant", "issue", "--keys", k, "--env", "e", "--session", " ", "--target", "localhost:5173"},
                {"grant", "issue", "--keys", k, "--env", "e", "--target", "localhost:5173"},
                {"grant", "issue", "--keys", k, "--env", "e", "--session", "s", "--target", "localhost:5173", "--bogus"},
                {"grant", "isue"},
                {"token", "issue", "--keys", k, "--env", "e", "--ttl", "25h"},
        };
        for (String[] args : cases) {
            Result r = run(args);
            assertEquals(1, r.exitCode(), () -> String.join(" ", args) + "\n" + r);
            assertEquals("", r.out(), () -> String.join(" ", args) + "\n" + r);
            r.cliErrorLine();
        }
    }

    @Test
    void longGrantIsIssuedWithAWarningOnStderrOnly() {
        Result r = run("grant", "issue", "--keys", keys.toString(), "--env", "env-1", "--session", "s",
                "--target", "localhost:5173", "--ttl", "1h");
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals(1, r.outLines().size());
        assertTrue(r.err().contains("should live minutes"), r::toString);
        assertFalse(r.err().contains(r.outLines().get(0)), "the grant itself is never logged");
    }

    @Test
    void tokenIssueOutputVerifiesAsAConnectionToken() throws Exception {
        Result r = run("token", "issue", "--keys", keys.toString(), "--env", "env-1");
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals(1, r.outLines().size(), r::toString);
        assertEquals("", r.err());

        VerifiedToken token = verifier().verifyConnectionToken(r.outLines().get(0), "env-1");
        assertEquals("env-1", token.environment());
        assertEquals(KeyDirectory.open(keys).signingKey().kid(), token.kid());
        GrantException wrongEnv = assertThrows(GrantException.class,
                () -> verifier().verifyConnectionToken(r.outLines().get(0), "env-2"));
        assertEquals(GrantFailure.WRONG_ENVIRONMENT, wrongEnv.failure());
        // A token is not a grant.
        assertThrows(GrantException.class, () -> verifier().verifyGrant(r.outLines().get(0), "env-1", "localhost:1"));
    }

    @Test
    void missingKeysAreRefusedWithExitCode3() {
        Result r = run("token", "issue", "--keys", tmp.resolve("nope").toString(), "--env", "env-1");
        assertEquals(3, r.exitCode(), r::toString);
        assertTrue(r.cliErrorLine().contains("keys init"), r::toString);
    }

    @Test
    void failingGrantIssueNeverPrintsKeyMaterial() throws Exception {
        Path signing = keys.resolve(KeyDirectory.SIGNING_KEY_FILE);
        String keyJson = Files.readString(signing, StandardCharsets.UTF_8);
        JsonNode jwk = JSON.readTree(keyJson);
        String d = jwk.get("d").asText();
        assertTrue(d.length() > 20, "the private key parameter is present");

        List<Result> failures = new ArrayList<>();
        String k = keys.toString();
        failures.add(run("grant", "issue", "--keys", k, "--env", "e", "--session", "s", "--target", "nonsense"));
        failures.add(run("grant", "issue", "--keys", k, "--env", "e", "--session", "s", "--target", "localhost:5173",
                "--ttl", "2d"));

        // A signing key readable by others is refused...
        Files.setPosixFilePermissions(signing, PosixFilePermissions.fromString("rw-r--r--"));
        Result open = run("grant", "issue", "--keys", k, "--env", "e", "--session", "s", "--target", "localhost:5173");
        assertEquals(3, open.exitCode(), open::toString);
        assertTrue(open.cliErrorLine().contains("chmod 600"), open::toString);
        failures.add(open);
        Files.setPosixFilePermissions(signing, PosixFilePermissions.fromString("rw-------"));

        // ...and so is a damaged one, without quoting it.
        Files.writeString(signing, keyJson.replace("\"kty\"", "\"kty\":\"XX\",\"was\""), StandardCharsets.UTF_8);
        Result damaged = run("grant", "issue", "--keys", k, "--env", "e", "--session", "s", "--target",
                "localhost:5173");
        assertEquals(3, damaged.exitCode(), damaged::toString);
        failures.add(damaged);
        Files.writeString(signing, keyJson.substring(0, keyJson.length() / 2), StandardCharsets.UTF_8);
        Result truncated = run("grant", "issue", "--keys", k, "--env", "e", "--session", "s", "--target",
                "localhost:5173");
        assertEquals(3, truncated.exitCode(), truncated::toString);
        failures.add(truncated);

        for (Result r : failures) {
            assertTrue(r.exitCode() != 0, r::toString);
            assertEquals("", r.out(), r::toString);
            r.cliErrorLine();
            assertFalse(r.err().contains(d), () -> "private key parameter leaked: " + r);
            assertFalse(r.err().contains(d.substring(0, 16)), () -> "private key prefix leaked: " + r);
            assertFalse(r.err().contains("\"d\""), () -> "JWK content leaked: " + r);
        }
    }
}
