package dev.previewtunnel.mux.local;

import io.netty.handler.codec.DecoderException;
import io.netty.util.internal.OutOfDirectMemoryError;
import org.junit.jupiter.api.Test;

import java.io.IOException;

import static org.junit.jupiter.api.Assertions.assertNull;
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
}
