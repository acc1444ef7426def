package dev.previewtunnel.cli;

import io.netty.channel.epoll.Epoll;
import io.netty.channel.unix.Socket;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * systemd's readiness protocol ({@code Type=notify}, sd_notify(3)) spoken by the JVM itself: when
 * {@code NOTIFY_SOCKET} is set, {@code READY=1} once the service listens and {@code STOPPING=1} when it starts to
 * drain, each with a {@code STATUS=} line, as one datagram on that AF_UNIX socket. Sent from this process, never
 * through a {@code systemd-notify} child: systemd accepts a message only from the unit's main PID (NotifyAccess=main)
 * and a short-lived child's may arrive after it has exited and be dropped.
 *
 * <p>An abstract socket name ({@code @name}) is sent to as Linux' abstract namespace (a leading NUL byte). A
 * relative path is logged and nothing is sent; without the native transport (not Linux) each message is an
 * error line instead. A failed send is an error line, never a failure of the service; but under Type=notify
 * systemd then never sees READY=1 and stops the unit at TimeoutStartSec, which the line says.
 */
public final class SystemdNotify {
    /** The environment variable systemd sets for a Type=notify service. */
    public static final String NOTIFY_SOCKET = "NOTIFY_SOCKET";
    private static final Logger LOG = LoggerFactory.getLogger(SystemdNotify.class);
    private static final SystemdNotify NONE = new SystemdNotify(null);
    private static final String UNDER_NOTIFY = "; a Type=notify unit is stopped at its TimeoutStartSec without it";

    private final byte[] address; // null: not under systemd (or cannot send)

    private SystemdNotify(byte[] address) {
        this.address = address;
    }

    /** From this process' {@code NOTIFY_SOCKET}. */
    public static SystemdNotify fromEnvironment() {
        return of(System.getenv());
    }

    /** From {@code env}'s {@code NOTIFY_SOCKET}; a no-op notifier when it is unset or unusable. */
    public static SystemdNotify of(Map<String, String> env) {
        String socket = env.get(NOTIFY_SOCKET);
        if (socket == null || socket.isEmpty()) {
            return NONE;
        }
        byte[] address;
        if (socket.startsWith("@")) {
            address = ("\0" + socket.substring(1)).getBytes(StandardCharsets.UTF_8);
        } else if (socket.startsWith("/")) {
            address = socket.getBytes(StandardCharsets.UTF_8);
        } else {
            LOG.error("{}={} is neither an absolute path nor an abstract name (@...): readiness is not signalled"
                    + UNDER_NOTIFY,
                    NOTIFY_SOCKET, socket);
            return NONE;
        }
        if (address.length > Socket.UDS_SUN_PATH_SIZE) {
            LOG.error("{} is longer than an AF_UNIX address can be: readiness is not signalled" + UNDER_NOTIFY,
                    NOTIFY_SOCKET);
            return NONE;
        }
        return new SystemdNotify(address);
    }

    /** True when messages are sent (NOTIFY_SOCKET set and usable). */
    public boolean enabled() {
        return address != null;
    }

    /** {@code READY=1}: the service listens; {@code status} is what {@code systemctl status} shows. */
    public void ready(String status) {
        send("READY=1\nSTATUS=" + oneLine(status) + "\n");
    }

    /** {@code STOPPING=1}: the service is draining and will exit. */
    public void stopping(String status) {
        send("STOPPING=1\nSTATUS=" + oneLine(status) + "\n");
    }

    /** A newline inside STATUS would start another assignment. */
    private static String oneLine(String status) {
        return status.replace('\n', ' ').replace('\r', ' ');
    }

    /** One datagram of newline-separated assignments. */
    void send(String message) {
        if (address == null) {
            return;
        }
        // Checked here, not when built: every command object builds one, and loading the native library would
        // slow down short commands run with NOTIFY_SOCKET set.
        if (!Epoll.isAvailable()) {
            LOG.error("{} is set but the native transport is unavailable ({}): systemd is not notified" + UNDER_NOTIFY,
                    NOTIFY_SOCKET, Epoll.unavailabilityCause().toString());
            return;
        }
        byte[] bytes = message.getBytes(StandardCharsets.UTF_8);
        ByteBuffer buffer = ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
        Socket socket = null;
        try {
            socket = Socket.newSocketDomainDgram();
            int sent = socket.sendToDomainSocket(buffer, 0, bytes.length, address);
            if (sent != bytes.length) {
                LOG.warn("{}: sent {} of {} bytes", NOTIFY_SOCKET, sent, bytes.length);
            }
        } catch (IOException | RuntimeException e) {
            LOG.error("cannot notify systemd through {} ({})" + UNDER_NOTIFY, NOTIFY_SOCKET, e.toString());
        } finally {
            if (socket != null) {
                try {
                    socket.close();
                } catch (IOException e) {
                    // nothing was kept open
                }
            }
        }
    }
}
