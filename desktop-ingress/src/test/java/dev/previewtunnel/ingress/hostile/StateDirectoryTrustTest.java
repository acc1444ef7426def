package dev.previewtunnel.ingress.hostile;

import dev.previewtunnel.cli.InProcessCli;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.ingress.cli.IngressMain;
import dev.previewtunnel.testing.ForeignOwner;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16 item 9: a state directory another user owns or may write, and a control.json another user owns or may
 * read, are not trusted. 'run' refuses to start (exit 3, one line) and 'status' / 'session list' refuse to send the
 * control token anywhere such a file says (exit 3, one line). The control case (an owner-only file of ours) gets
 * past the check and fails only because nothing listens (exit 2).
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class StateDirectoryTrustTest {
    private static final String PREFIX = "desktop-ingress: ";

    @TempDir
    Path tmp;

    private static Result cli(String... args) {
        return InProcessCli.run(new IngressMain(), PREFIX, args);
    }

    private static void assertRefused(Result r, String expected, Path path) {
        assertEquals(3, r.exitCode(), r::toString);
        String line = r.cliErrorLine(); // exactly one plain line on stderr
        assertTrue(line.contains(expected) && line.contains(path.toString()), line);
    }

    private Result run(Path stateDir) {
        // The gateway is never dialed: the state directory is checked before anything connects.
        return cli("run", "--gateway", "ws://127.0.0.1:9/tunnel", "--token", "header.payload.signature",
                "--listen", "127.0.0.1:0", "--state-dir", stateDir.toString());
    }

    @Test
    void runRefusesAGroupWritableStateDirectory() throws Exception {
        Path dir = Files.createDirectory(tmp.resolve("state"));
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwx---"));
        assertRefused(run(dir), "writable by group/others", dir);

        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx---rwx"));
        assertRefused(run(dir), "writable by group/others", dir);
    }

    @Test
    void runRefusesAStateDirectoryOwnedBySomeoneElse() throws Exception {
        int foreignUid = ForeignOwner.uid();
        Path dir = Files.createDirectory(tmp.resolve("state"));
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        Files.setAttribute(dir, "unix:uid", foreignUid);
        assertRefused(run(dir), "belongs to uid " + foreignUid, dir);
    }

    @Test
    void controlCommandsRefuseALooseModeControlFile() throws Exception {
        Path dir = stateDirWithControlFile();
        Path control = dir.resolve("control.json");
        Files.setPosixFilePermissions(control, PosixFilePermissions.fromString("rw-r--r--"));
        assertRefused(cli("status", "--state-dir", dir.toString()), "open to group/others", control);
        assertRefused(cli("session", "list", "--state-dir", dir.toString()), "open to group/others", control);
    }

    @Test
    void controlCommandsRefuseAControlFileOwnedBySomeoneElse() throws Exception {
        int foreignUid = ForeignOwner.uid();
        Path dir = stateDirWithControlFile();
        Path control = dir.resolve("control.json");
        Files.setAttribute(control, "unix:uid", foreignUid);
        assertRefused(cli("status", "--state-dir", dir.toString()), "belongs to uid " + foreignUid, control);
        assertRefused(cli("session", "list", "--state-dir", dir.toString()), "belongs to uid " + foreignUid,
                control);
    }

    @Test
    void controlCommandsRefuseAStateDirectoryOthersMayWrite() throws Exception {
        Path dir = stateDirWithControlFile();
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        assertRefused(cli("status", "--state-dir", dir.toString()), "writable by group/others", dir);
    }

    @Test
    void anOwnerOnlyControlFileOfOursIsBelieved() throws Exception {
        Result r = cli("status", "--state-dir", stateDirWithControlFile().toString());
        assertEquals(2, r.exitCode(), r::toString); // past the check; nothing listens there
        assertTrue(r.cliErrorLine().contains("does not answer"), r::toString);
    }

    /** A state directory (rwx------) with an owner-only control.json pointing at a loopback port nobody serves. */
    private Path stateDirWithControlFile() throws Exception {
        Path dir = Files.createDirectory(tmp.resolve("state"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            port = s.getLocalPort();
        }
        Path control = dir.resolve("control.json");
        Files.writeString(control,
                "{\"url\":\"http://127.0.0.1:" + port + "\",\"token\":\"t0k3n-value\",\"pid\":-1}\n");
        Files.setPosixFilePermissions(control, PosixFilePermissions.fromString("rw-------"));
        return dir;
    }
}
