package dev.previewtunnel.gateway.hostile;

import dev.previewtunnel.testing.ForeignOwner;
import dev.previewtunnel.cli.InProcessCli;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.gateway.cli.GatewayMain;
import dev.previewtunnel.grants.KeyDirectory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16 item 9 (same class): the verification keys decide which grants are genuine, so 'serve' refuses a key
 * directory or verify-keys file that another user owns or group/others may write (exit 3, one line) instead of
 * re-reading, every second, keys anyone could have added to.
 */
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class KeyDirectoryTrustTest {
    @TempDir
    Path tmp;

    private Result serve(Path keys) {
        return InProcessCli.run(new GatewayMain(), "env-gateway: ", "serve", "--keys", keys.toString(), "--env", "e",
                "--listen", "127.0.0.1:0", "--state-dir", tmp.resolve("state").toString());
    }

    private static void assertRefused(Result r, String expected, Path path) {
        assertEquals(3, r.exitCode(), r::toString);
        String line = r.cliErrorLine(); // exactly one plain line
        assertTrue(line.contains(expected) && line.contains(path.toString()), line);
    }

    @Test
    void aKeyDirectoryOthersMayWriteIsRefused() throws Exception {
        Path keys = KeyDirectory.init(tmp.resolve("keys")).dir();
        Files.setPosixFilePermissions(keys, PosixFilePermissions.fromString("rwxrwxrwx"));
        assertRefused(serve(keys), "writable by group/others", keys);
    }

    @Test
    void aVerifyKeysFileOthersMayWriteOrOwnIsRefused() throws Exception {
        Path keys = KeyDirectory.init(tmp.resolve("keys")).dir();
        Path verify = keys.resolve(KeyDirectory.VERIFY_KEYS_FILE);
        Files.setPosixFilePermissions(verify, PosixFilePermissions.fromString("rw-rw-r--"));
        assertRefused(serve(keys), "writable by group/others", verify);

        Files.setPosixFilePermissions(verify, PosixFilePermissions.fromString("rw-r--r--"));
        Files.setAttribute(verify, "unix:uid", ForeignOwner.uid());
        assertRefused(serve(verify), "belongs to uid " + ForeignOwner.uid(), verify);
    }
}
