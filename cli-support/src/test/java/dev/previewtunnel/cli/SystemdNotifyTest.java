package dev.previewtunnel.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * sd_notify from the JVM to a real AF_UNIX datagram socket, as systemd receives it (no systemd runs here: the
 * socket stands in for PID 1's end): a path and an abstract name, and a ServiceRunner's READY=1 after the
 * announcement and STOPPING=1 at the stop.
 */
class SystemdNotifyTest {
    @TempDir
    Path tmp;

    @Test
    void sendsToASocketPath() throws Exception {
        String path = tmp.resolve("notify").toString();
        try (NotifyReceiver systemd = new NotifyReceiver(path)) {
            SystemdNotify notify = SystemdNotify.of(Map.of("NOTIFY_SOCKET", path));
            assertTrue(notify.enabled());
            notify.ready("gateway serving\non two lines");
            assertEquals("READY=1\nSTATUS=gateway serving on two lines\n", systemd.next());
        }
    }

    @Test
    void sendsToAnAbstractName() throws Exception {
        String name = "ptun-test-" + UUID.randomUUID();
        try (NotifyReceiver systemd = new NotifyReceiver("\0" + name)) {
            SystemdNotify.of(Map.of("NOTIFY_SOCKET", "@" + name)).stopping("draining");
            assertEquals("STOPPING=1\nSTATUS=draining\n", systemd.next());
        }
    }

    @Test
    void withoutAUsableSocketNothingIsSent() {
        assertFalse(SystemdNotify.of(Map.of()).enabled());
        assertFalse(SystemdNotify.of(Map.of("NOTIFY_SOCKET", "")).enabled());
        assertFalse(SystemdNotify.of(Map.of("NOTIFY_SOCKET", "relative/notify")).enabled());
        SystemdNotify.of(Map.of()).ready("nobody listens"); // no-op, no exception
        // A socket nobody listens on: a warning, never a failure of the service.
        SystemdNotify.of(Map.of("NOTIFY_SOCKET", tmp.resolve("gone").toString())).ready("x");
    }

    @Test
    void aServiceSaysReadyAfterItsAnnouncementAndStoppingAtItsStop() throws Exception {
        String path = tmp.resolve("notify").toString();
        try (NotifyReceiver systemd = new NotifyReceiver(path)) {
            ServiceRunner runner = new ServiceRunner(LoggerFactory.getLogger(getClass()), "gateway", () -> false,
                    SystemdNotify.of(Map.of("NOTIFY_SOCKET", path)));
            Thread command = new Thread(() -> runner.call(() -> {
                runner.open(() -> { });
                runner.serve("test-shutdown", () -> assertNull(systemd.pending(), "READY=1 before the ready line"));
                return 0;
            }));
            command.start();
            assertTrue(runner.awaitStarted(20, TimeUnit.SECONDS));
            assertEquals("READY=1\nSTATUS=gateway serving\n", systemd.next());
            runner.stop();
            assertEquals("STOPPING=1\nSTATUS=gateway draining (stop)\n", systemd.next());
            command.join(20_000);
            assertFalse(command.isAlive());
        }
    }
}
