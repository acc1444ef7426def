package dev.previewtunnel.mux.local;

import io.netty.handler.codec.DecoderException;
import io.netty.util.internal.OutOfDirectMemoryError;
import org.junit.jupiter.api.Test;

import java.io.IOException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertSame;

/** Which throwables end the process (the process-level behaviour is FatalErrorExitTest's, in env-gateway). */
class FatalErrorsTest {
    @Test
    void outOfMemoryAndBrokenClassesAreFatalAlsoWhenWrapped() throws Exception {
        OutOfMemoryError heap = new OutOfMemoryError("Java heap space");
        assertSame(heap, FatalErrors.fatalIn(heap));
        // Netty's own direct-memory error, wrapped the way a decoder wraps what its decode threw.
        java.lang.reflect.Constructor<OutOfDirectMemoryError> c =
                OutOfDirectMemoryError.class.getDeclaredConstructor(String.class);
        c.setAccessible(true);
        OutOfDirectMemoryError direct = c.newInstance("failed to allocate 4194304 byte(s) of direct memory");
        assertSame(direct, FatalErrors.fatalIn(new DecoderException(direct)));
        StackOverflowError deep = new StackOverflowError();
        assertSame(deep, FatalErrors.fatalIn(new RuntimeException(new IOException(deep))));
        NoClassDefFoundError missing = new NoClassDefFoundError("x/Y");
        assertSame(missing, FatalErrors.fatalIn(missing));
    }

    @Test
    void peerErrorsAndOtherExceptionsAreNot() {
        assertNull(FatalErrors.fatalIn(new IOException("Connection reset by peer")));
        assertNull(FatalErrors.fatalIn(new DecoderException(new IllegalArgumentException("bad frame"))));
        assertNull(FatalErrors.fatalIn(null));
        // Not installed in this JVM (tests embed the classes): check() must return, not end the test run.
        FatalErrors.check(new OutOfMemoryError("not installed"));
    }

    /** A loop that terminates while the program runs ends the process (child JVM: it halts). */
    @Test
    void aLoopThatDiesUnaskedEndsTheProcess() throws Exception {
        java.util.List<String> command = new java.util.ArrayList<>(java.util.List.of(
                java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx64m"));
        command.addAll(FatalErrors.JVM_FLAGS);
        command.addAll(java.util.List.of("-cp", System.getProperty("java.class.path"), DeadLoopMain.class.getName()));
        java.nio.file.Path err = java.nio.file.Files.createTempFile("dead-loop", ".err");
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(false)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(err.toFile()).start();
            long started = System.nanoTime();
            boolean exited = p.waitFor(20, java.util.concurrent.TimeUnit.SECONDS);
            if (!exited) {
                p.destroyForcibly().waitFor(10, java.util.concurrent.TimeUnit.SECONDS);
            }
            System.out.printf("DEAD LOOP: %s after %d ms%n", exited ? "exited " + p.exitValue() : "still running",
                    (System.nanoTime() - started) / 1_000_000);
            assertTrue(exited, "still running 20 s after one of its event loops terminated");
            assertEquals(FatalErrors.EXIT_STATUS, p.exitValue());
            assertTrue(java.nio.file.Files.readString(err).contains("\"event\":\"fatal_error\""));
        } finally {
            java.nio.file.Files.deleteIfExists(err);
        }
    }
}
