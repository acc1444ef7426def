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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ServiceRunnerTest {
    private static final InetSocketAddress ADDRESS = new InetSocketAddress(InetAddress.getLoopbackAddress(), 7443);

    @TempDir
    Path tmp;

    @Test
    void bindFailuresAreUnreachableWithTheAddressOthersKeepTheirMeaning() {
        CliException bind = assertInstanceOf(CliException.class,
                ServiceRunner.bindFailure(new BindException("Address already in use"), " (--admin-listen)", ADDRESS));
        assertEquals(ExitCodes.UNREACHABLE, bind.exitCode());
        assertEquals("cannot listen on 127.0.0.1:7443 (--admin-listen): Address already in use", bind.getMessage());
        CliException channel = assertInstanceOf(CliException.class,
                ServiceRunner.bindFailure(new ChannelException("bind(..) failed"), "", ADDRESS));
        assertEquals(ExitCodes.UNREACHABLE, channel.exitCode());
        IllegalStateException bug = new IllegalStateException("bug");
        assertSame(bug, ServiceRunner.bindFailure(bug, "", ADDRESS), "a runtime failure is not a bind failure");
        CliException other = assertInstanceOf(CliException.class,
                ServiceRunner.bindFailure(new TimeoutException(), "", ADDRESS));
        assertEquals(ExitCodes.INTERNAL, other.exitCode());
    }

    @Test
    void deleteQuietlyDeletesAndOnlyWarnsWhenItCannot() throws Exception {
        Path file = Files.writeString(tmp.resolve("admin.json"), "{}");
        ServiceRunner.deleteQuietly(LoggerFactory.getLogger(getClass()), file);
        assertFalse(Files.exists(file));
        ServiceRunner.deleteQuietly(LoggerFactory.getLogger(getClass()), file); // already gone: nothing
        ServiceRunner.deleteQuietly(LoggerFactory.getLogger(getClass()), null);
        Path dir = Files.createDirectories(tmp.resolve("not-empty"));
        Files.writeString(dir.resolve("x"), "x");
        ServiceRunner.deleteQuietly(LoggerFactory.getLogger(getClass()), dir); // DirectoryNotEmpty: a warning
        assertTrue(Files.exists(dir));
    }

    @Test
    void onSignalRunsTheStopAndDoesNotHaltWhenNotStandalone() {
        AtomicBoolean ran = new AtomicBoolean();
        ServiceRunner.onSignal(LoggerFactory.getLogger(getClass()), () -> ran.set(true), false);
        assertTrue(ran.get());
        assertDoesNotThrow(() -> ServiceRunner.onSignal(LoggerFactory.getLogger(getClass()), () -> {
            throw new IllegalStateException("stop failed");
        }, false), "a failed stop is logged; the hook itself must not throw");
    }

    private static ServiceRunner runner() {
        return new ServiceRunner(LoggerFactory.getLogger(ServiceRunnerTest.class), "test", () -> false);
    }

    @Test
    void aStopClosesEveryResourceOnceInReverseOrderAndEndsTheServe() throws Exception {
        ServiceRunner runner = runner();
        List<String> closed = new ArrayList<>();
        AtomicInteger code = new AtomicInteger(-1);
        Thread command = new Thread(() -> code.set(runner.call(() -> {
            runner.open(() -> closed.add("first"));
            runner.open(() -> closed.add("second"));
            runner.serve("test-shutdown", () -> closed.add("ready"));
            return 0;
        })));
        command.start();
        assertTrue(runner.awaitStarted(10, TimeUnit.SECONDS));
        assertFalse(runner.stopping());
        runner.stop();
        runner.stop(); // a second stop only waits
        command.join(10_000);
        assertFalse(command.isAlive());
        assertEquals(0, code.get());
        assertTrue(runner.stopping());
        assertEquals(List.of("ready", "second", "first"), closed);
    }

    @Test
    void aStopDuringTheStartClosesWhatWasOpenedWithoutAnnouncing() throws Exception {
        ServiceRunner runner = runner();
        List<String> closed = new ArrayList<>();
        CountDownLatch opened = new CountDownLatch(1);
        CountDownLatch stopAsked = new CountDownLatch(1);
        Thread command = new Thread(() -> runner.call(() -> {
            runner.open(() -> closed.add("server"));
            opened.countDown();
            try {
                stopAsked.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            runner.serve("test-shutdown", () -> closed.add("ready"));
            return 0;
        }));
        command.start();
        assertTrue(opened.await(10, TimeUnit.SECONDS));
        Thread stopper = new Thread(runner::stop);
        stopper.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!runner.stopping() && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertTrue(runner.stopping());
        stopAsked.countDown();
        stopper.join(10_000);
        command.join(10_000);
        assertFalse(stopper.isAlive());
        assertEquals(List.of("server"), closed, "closed once, never announced");
    }

    @Test
    void aFailedStartClosesWhatItOpenedAndReleasesTheWaiters() throws Exception {
        ServiceRunner runner = runner();
        List<String> closed = new ArrayList<>();
        assertThrows(IllegalStateException.class, () -> runner.call(() -> {
            runner.open(() -> closed.add("first"));
            runner.open(() -> {
                closed.add("second");
                throw new IllegalStateException("close failed");
            });
            throw new IllegalStateException("bind failed");
        }));
        assertEquals(List.of("second", "first"), closed, "a failing close does not keep the others open");
        assertTrue(runner.awaitStarted(0, TimeUnit.SECONDS));
        runner.stop(); // returns at once: the command has ended
        assertThrows(IllegalStateException.class, () -> runner.open(() -> { }));
    }
}
