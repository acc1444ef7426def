package dev.previewtunnel.mux.local;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.internal.PlatformDependent;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Netty's own switch after {@link NettyDefaults#apply}, read in child JVMs (this JVM's Netty started long ago). */
class NettyDefaultsTest {
    @Test
    void jfrEventsAreOffUnlessTheUserAsksForThem() throws Exception {
        assertEquals("jfr false", jfrIn(List.of()));
        // the control: the same child without apply() has them on here, so the first answer is apply()'s doing
        assertEquals("jfr true", jfrIn(List.of("-Dskip.apply=true")));
        assertEquals("jfr true", jfrIn(List.of("-Dio.netty.jfr.enabled=true")));
    }

    private static String jfrIn(List<String> flags) throws Exception {
        return ChildJvm.lastLine(flags, Child.class);
    }

    /** The child: applies the defaults (unless told not to), allocates as the programs do, prints Netty's switch. */
    public static final class Child {
        public static void main(String[] args) {
            if (!Boolean.getBoolean("skip.apply")) {
                NettyDefaults.apply();
            }
            ByteBuf buf = ByteBufAllocator.DEFAULT.directBuffer(64);
            buf.release();
            System.out.println("jfr " + PlatformDependent.isJfrEnabled());
        }
    }
}
