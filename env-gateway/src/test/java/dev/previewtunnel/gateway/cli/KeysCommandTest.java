package dev.previewtunnel.gateway.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.grants.KeyDirectory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static dev.previewtunnel.gateway.cli.CliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class KeysCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;

    @Test
    void initCreatesOwnerOnlyKeysAndPrintsOneJsonLine() throws Exception {
        Path dir = tmp.resolve("keys");
        Result r = run("keys", "init", "--dir", dir.toString());

        assertEquals(0, r.exitCode(), r::toString);
        assertEquals(1, r.outLines().size(), r::toString);
        JsonNode event = JSON.readTree(r.outLines().get(0));
        assertEquals("keys_created", event.get("event").asText());
        assertEquals(dir.toAbsolutePath().normalize().toString(), event.get("dir").asText());
        String kid = event.get("kid").asText();
        assertTrue(kid.matches("k-[0-9a-f]{12}"), kid);
        assertEquals(kid, KeyDirectory.open(dir).signingKey().kid());

        assertEquals("rw-------", PosixFilePermissions.toString(
                Files.getPosixFilePermissions(dir.resolve(KeyDirectory.SIGNING_KEY_FILE))));
        assertEquals("rw-------", PosixFilePermissions.toString(
                Files.getPosixFilePermissions(dir.resolve(KeyDirectory.VERIFY_KEYS_FILE))));
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
        assertEquals("", r.err(), "nothing on stderr on success");
    }

    @Test
    void secondInitIsRefusedWithExitCode3AndOneLine() throws Exception {
        Path dir = tmp.resolve("keys");
        assertEquals(0, run("keys", "init", "--dir", dir.toString()).exitCode());
        byte[] before = Files.readAllBytes(dir.resolve(KeyDirectory.SIGNING_KEY_FILE));

        Result r = run("keys", "init", "--dir", dir.toString());

        assertEquals(3, r.exitCode(), r::toString);
        assertEquals("", r.out());
        String line = r.cliErrorLine();
        assertTrue(line.contains("already exists"), line);
        assertTrue(line.contains("rotate"), line);
        assertTrue(java.util.Arrays.equals(before, Files.readAllBytes(dir.resolve(KeyDirectory.SIGNING_KEY_FILE))),
                "existing signing key untouched");
    }

    @Test
    void rotatePrintsTheNewKidAndKeepsTheOldPublicKey() throws Exception {
        Path dir = tmp.resolve("keys");
        Result init = run("keys", "init", "--dir", dir.toString());
        String oldKid = JSON.readTree(init.out()).get("kid").asText();

        Result r = run("keys", "rotate", "--dir", dir.toString());

        assertEquals(0, r.exitCode(), r::toString);
        assertEquals(1, r.outLines().size(), r::toString);
        JsonNode event = JSON.readTree(r.outLines().get(0));
        assertEquals("keys_rotated", event.get("event").asText());
        String newKid = event.get("kid").asText();
        assertNotEquals(oldKid, newKid);
        KeyDirectory keys = KeyDirectory.open(dir);
        assertEquals(newKid, keys.signingKey().kid());
        assertTrue(keys.verificationKeys().kids().contains(oldKid));
    }

    @Test
    void rotateWithoutKeysIsRefused() {
        Result r = run("keys", "rotate", "--dir", tmp.resolve("empty").toString());
        assertEquals(3, r.exitCode(), r::toString);
        assertTrue(r.cliErrorLine().contains("keys init"), r::toString);
    }

    @Test
    void keysWithoutSubcommandIsAUsageError() {
        Result r = run("keys");
        assertEquals(1, r.exitCode(), r::toString);
        assertTrue(r.cliErrorLine().contains("(see 'env-gateway keys --help')"), r::toString);
    }

    @Test
    void initWithoutDirIsAUsageError() {
        Result r = run("keys", "init");
        assertEquals(1, r.exitCode(), r::toString);
        assertTrue(r.cliErrorLine().contains("--dir"), r::toString);
    }
}
