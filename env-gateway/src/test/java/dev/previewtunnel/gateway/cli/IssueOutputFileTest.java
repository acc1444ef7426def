package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.grants.GrantVerifier;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.grants.VerifierPolicy;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.util.List;
import java.util.stream.Stream;

import static dev.previewtunnel.gateway.cli.CliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code token issue -o FILE} and {@code grant issue -o FILE}: the secret in an owner-only file, never others'. */
class IssueOutputFileTest {
    @TempDir
    Path tmp;
    Path keys;
    Path out;

    @BeforeEach
    void initKeys() throws Exception {
        keys = tmp.resolve("keys");
        assertEquals(0, run("keys", "init", "--dir", keys.toString()).exitCode());
        out = Files.createDirectory(tmp.resolve("out"));
    }

    private GrantVerifier verifier() throws Exception {
        return new GrantVerifier(KeyDirectory.open(keys).verificationKeys(), Clock.systemUTC(),
                VerifierPolicy.defaults());
    }

    private Result token(String... output) {
        return run(Stream.concat(Stream.of("token", "issue", "--keys", keys.toString(), "--env", "env-1"),
                Stream.of(output)).toArray(String[]::new));
    }

    private Result grant(String... output) {
        return run(Stream.concat(Stream.of("grant", "issue", "--keys", keys.toString(), "--env", "env-1",
                "--session", "web", "--target", "localhost:5173"), Stream.of(output)).toArray(String[]::new));
    }

    private static String perms(Path p) throws Exception {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
    }

    @Test
    void tokenGoesToANewOwnerOnlyFileAndNothingToStdout() throws Exception {
        Path file = out.resolve("token");
        Result r = token("-o", file.toString());
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals("", r.out(), r::toString);
        assertEquals("rw-------", perms(file));
        List<String> lines = Files.readAllLines(file);
        assertEquals(1, lines.size());
        assertEquals("env-1", verifier().verifyConnectionToken(lines.get(0), "env-1").environment());
        assertFalse(r.err().contains(lines.get(0)), "the token is never logged");
    }

    @Test
    void anExistingOwnerOnlyFileIsReplacedAtomicallyWithNoTemporaryFileLeft() throws Exception {
        Path file = Files.writeString(out.resolve("grant"), "old grant\n");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        Result r = grant("--output", file.toString());
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals("", r.out(), r::toString);
        assertEquals("rw-------", perms(file));
        String jwt = Files.readString(file).strip();
        assertEquals("web", verifier().verifyGrant(jwt, "env-1", "localhost:5173").session());
        try (Stream<Path> files = Files.list(out)) {
            assertEquals(List.of(file), files.toList());
        }
    }

    @Test
    void aFileOthersMayReadIsRefusedAndLeftAsItWas() throws Exception {
        for (String mode : List.of("rw-r--r--", "rw-rw----", "rw----r--")) {
            Path file = Files.writeString(out.resolve("shared-" + mode), "old\n");
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString(mode));
            for (Result r : List.of(token("-o", file.toString()), grant("-o", file.toString()))) {
                assertEquals(3, r.exitCode(), r::toString);
                assertEquals("", r.out(), r::toString);
                String line = r.cliErrorLine();
                assertTrue(line.contains("chmod 600 " + file) && line.contains("remove it"), line);
                assertEquals("old\n", Files.readString(file));
                assertEquals(mode, perms(file));
            }
        }
    }

    @Test
    void aSymbolicLinkOrDirectoryIsRefusedAndAMissingDirectoryIsAUsageError() throws Exception {
        Path target = Files.writeString(tmp.resolve("elsewhere"), "x\n");
        Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rw-------"));
        Path link = Files.createSymbolicLink(out.resolve("link"), target);
        Result viaLink = token("-o", link.toString());
        assertEquals(3, viaLink.exitCode(), viaLink::toString);
        assertTrue(viaLink.cliErrorLine().contains("not a regular file"), viaLink::toString);
        assertEquals("x\n", Files.readString(target));
        assertTrue(Files.isSymbolicLink(link));

        Result dir = token("-o", out.toString());
        assertEquals(3, dir.exitCode(), dir::toString);

        Result missing = grant("-o", tmp.resolve("no/such/dir/grant").toString());
        assertEquals(1, missing.exitCode(), missing::toString);
        assertTrue(missing.cliErrorLine().contains("does not exist"), missing::toString);
    }

    @Test
    void withoutOutputTheSecretIsPrintedAsBefore() {
        Result r = token();
        assertEquals(0, r.exitCode(), r::toString);
        assertEquals(1, r.outLines().size(), r::toString);
    }
}
