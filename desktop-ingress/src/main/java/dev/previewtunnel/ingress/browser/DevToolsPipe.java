package dev.previewtunnel.ingress.browser;

import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The two named pipes that become the browser's fds 3 and 4 for {@code --remote-debugging-pipe} (Java cannot
 * hand a child extra descriptors, so {@code /bin/sh} opens them and execs the browser). This side opens each pipe
 * read-write, which never blocks, whether or not the browser ever opens its end; the pipes live in an owner-only
 * temporary directory, deleted once the browser has answered over them.
 */
final class DevToolsPipe {
    static final String IN = "PTUN_DEVTOOLS_IN";
    static final String OUT = "PTUN_DEVTOOLS_OUT";
    private static final String EXEC = "exec \"$0\" \"$@\" 3<\"$" + IN + "\" 4>\"$" + OUT + "\"";

    private final Path dir;
    private final RandomAccessFile toBrowser;
    private final RandomAccessFile fromBrowser;

    private DevToolsPipe(Path dir, RandomAccessFile toBrowser, RandomAccessFile fromBrowser) {
        this.dir = dir;
        this.toBrowser = toBrowser;
        this.fromBrowser = fromBrowser;
    }

    static DevToolsPipe create() throws IOException {
        Path dir = Files.createTempDirectory("ptun-devtools",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        try {
            mkfifo(dir.resolve("in"), dir.resolve("out"));
            return new DevToolsPipe(dir, new RandomAccessFile(dir.resolve("in").toFile(), "rw"),
                    new RandomAccessFile(dir.resolve("out").toFile(), "rw"));
        } catch (IOException | RuntimeException e) {
            deleteDir(dir);
            throw e;
        }
    }

    private static void mkfifo(Path... fifos) throws IOException {
        List<String> cmd = new ArrayList<>(List.of("mkfifo", "-m", "600"));
        for (Path f : fifos) {
            cmd.add(f.toString());
        }
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IOException("mkfifo failed: " + new String(p.getInputStream().readAllBytes()).trim());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
            throw new IOException("interrupted making the DevTools pipes");
        }
    }

    /** {@code /bin/sh -c EXEC browserCommand...}, the pipe paths in its environment. */
    ProcessBuilder wrap(List<String> browserCommand) {
        List<String> cmd = new ArrayList<>(List.of("/bin/sh", "-c", EXEC));
        cmd.addAll(browserCommand);
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().put(IN, dir.resolve("in").toString());
        pb.environment().put(OUT, dir.resolve("out").toString());
        return pb;
    }

    /** The DevTools client over the pipes. */
    DevTools connect() throws IOException {
        return DevTools.overPipe(new FileOutputStream(toBrowser.getFD()), new FileInputStream(fromBrowser.getFD()),
                this::wake);
    }

    /** Unblocks the reader: this side can write into the browser's output pipe too, and a lone NUL is no message. */
    private void wake() {
        try {
            fromBrowser.write(0);
        } catch (IOException e) {
            // closed already: nothing to wake
        }
    }

    /** Deletes the pipes' names once the browser has opened them (it has answered) or failed: the descriptors stay. */
    void unlink() {
        deleteDir(dir);
    }

    /** For a launch that failed before {@link #connect()}. */
    void discard() {
        try {
            toBrowser.close();
            fromBrowser.close();
        } catch (IOException e) {
            // nothing left to release
        }
        deleteDir(dir);
    }

    private static void deleteDir(Path dir) {
        try {
            Files.deleteIfExists(dir.resolve("in"));
            Files.deleteIfExists(dir.resolve("out"));
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            // a temporary directory: the system cleans it
        }
    }
}
