package dev.previewtunnel.cli;

import io.netty.channel.ChannelException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ServiceLifecycleTest {
    private static final InetSocketAddress ADDRESS = new InetSocketAddress(InetAddress.getLoopbackAddress(), 7443);

    @TempDir
    Path tmp;

    @Test
    void bindFailuresAreUnreachableWithTheAddressOthersKeepTheirMeaning() {
        CliException bind = assertInstanceOf(CliException.class,
                ServiceLifecycle.bindFailure(new BindException("Address already in use"), " (--admin-listen)", ADDRESS));
        assertEquals(ExitCodes.UNREACHABLE, bind.exitCode());
        assertEquals("cannot listen on 127.0.0.1:7443 (--admin-listen): Address already in use", bind.getMessage());
        CliException channel = assertInstanceOf(CliException.class,
                ServiceLifecycle.bindFailure(new ChannelException("bind(..) failed"), "", ADDRESS));
        assertEquals(ExitCodes.UNREACHABLE, channel.exitCode());
        IllegalStateException bug = new IllegalStateException("bug");
        assertSame(bug, ServiceLifecycle.bindFailure(bug, "", ADDRESS), "a runtime failure is not a bind failure");
        CliException other = assertInstanceOf(CliException.class,
                ServiceLifecycle.bindFailure(new TimeoutException(), "", ADDRESS));
        assertEquals(ExitCodes.INTERNAL, other.exitCode());
    }

    @Test
    void deleteQuietlyDeletesAndOnlyWarnsWhenItCannot() throws Exception {
        Path file = Files.writeString(tmp.resolve("admin.json"), "{}");
        ServiceLifecycle.deleteQuietly(LoggerFactory.getLogger(getClass()), file);
        assertFalse(Files.exists(file));
        ServiceLifecycle.deleteQuietly(LoggerFactory.getLogger(getClass()), file); // already gone: nothing
        ServiceLifecycle.deleteQuietly(LoggerFactory.getLogger(getClass()), null);
        Path dir = Files.createDirectories(tmp.resolve("not-empty"));
        Files.writeString(dir.resolve("x"), "x");
        ServiceLifecycle.deleteQuietly(LoggerFactory.getLogger(getClass()), dir); // DirectoryNotEmpty: a warning
        assertTrue(Files.exists(dir));
    }

    @Test
    void onSignalRunsTheStopAndDoesNotHaltWhenNotStandalone() {
        AtomicBoolean ran = new AtomicBoolean();
        ServiceLifecycle.onSignal(LoggerFactory.getLogger(getClass()), () -> ran.set(true), false);
        assertTrue(ran.get());
        assertDoesNotThrow(() -> ServiceLifecycle.onSignal(LoggerFactory.getLogger(getClass()), () -> {
            throw new IllegalStateException("stop failed");
        }, false), "a failed stop is logged; the hook itself must not throw");
    }
}
