package dev.previewtunnel.gateway.doctor;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;
import dev.previewtunnel.local.net.ListenAddress;
import dev.previewtunnel.local.net.ListenEndpoint;
import dev.previewtunnel.local.net.UnixSocketPath;

import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;

/**
 * {@code listen}: serve can bind its address (or a gateway already does), and says when that address is reachable
 * from other hosts, above all without TLS, where tokens and grants would cross the network in clear text. To see
 * whether the address can be bound it binds it for an instant and releases it. A Unix socket is
 * {@link UnixListenCheck}'s.
 *
 * @param text --listen, or null
 */
public record ListenCheck(String text, String path, boolean tls, Duration timeout) {

    public void run(DoctorReport report) {
        if (text == null) {
            report.fail("listen", ExitCodes.USAGE, "no listen address set: give --listen HOST:PORT, e.g. "
                    + "127.0.0.1:7443 (or PTUN_GATEWAY_LISTEN)");
            return;
        }
        InetSocketAddress address;
        try {
            ListenEndpoint endpoint = ListenEndpoint.parse(text);
            if (endpoint instanceof UnixSocketPath socket) {
                new UnixListenCheck(socket).run(report);
                return;
            }
            address = ((ListenAddress) endpoint).resolve();
        } catch (IllegalArgumentException e) {
            report.fail("listen", ExitCodes.USAGE, "listen address '" + Cli.shown(text) + "' is not "
                    + (text.startsWith(UnixSocketPath.SCHEME) ? "unix:/absolute/path" : "HOST:PORT") + " ("
                    + e.getMessage() + ")");
            return;
        } catch (IOException e) {
            report.fail("listen", ExitCodes.UNREACHABLE, "listen host of '" + Cli.shown(text) + "' does not resolve");
            return;
        }
        String shown = Cli.hostPort(address);
        String exposure = address.getAddress().isLoopbackAddress() ? ""
                : tls ? " (not loopback: reachable from other hosts, over TLS)"
                : " (not loopback and without TLS: tokens and grants would cross the network in clear text)";
        if (address.getPort() == 0) {
            report.ok("listen", shown + ": port 0, serve picks a free port and prints it" + exposure);
            return;
        }
        String occupant = ListenOccupant.of(address, path, tls, timeout);
        if (occupant == null) {
            checkBind(report, address, shown, exposure);
        } else if (occupant.equals(ListenOccupant.GATEWAY)) {
            report.ok("listen", "a preview-tunnel gateway is already listening on " + shown + " (serve is running)");
        } else {
            report.fail("listen", ExitCodes.UNREACHABLE, shown + " is in use by another program (" + occupant + "): "
                    + "pick another --listen port, or find it with: ss -ltnp 'sport = :" + address.getPort() + "'");
        }
    }

    private static void checkBind(DoctorReport report, InetSocketAddress address, String shown, String exposure) {
        try (ServerSocket probe = new ServerSocket()) {
            probe.setReuseAddress(true);
            probe.bind(address);
        } catch (BindException e) {
            report.fail("listen", ExitCodes.UNREACHABLE, "cannot bind " + shown + " (" + e.getMessage()
                    + "): use an address of this host, and a port above 1023 unless serve runs with the "
                    + "privilege for it");
            return;
        } catch (IOException e) {
            report.fail("listen", ExitCodes.UNREACHABLE, "cannot bind " + shown + " (" + e.getClass().getSimpleName()
                    + ")");
            return;
        }
        if (exposure.contains("clear text")) {
            report.warn("listen", shown + " is free" + exposure + ": listen on 127.0.0.1 and use ssh -L, or "
                    + "add --tls-cert/--tls-key");
        } else {
            report.ok("listen", shown + " is free: serve can bind it" + exposure);
        }
    }
}
