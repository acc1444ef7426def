package dev.previewtunnel.ingress.open;

import dev.previewtunnel.ingress.ssh.RemotePort;
import dev.previewtunnel.ingress.ssh.SshLink;
import dev.previewtunnel.ingress.status.FrontDoor;
import dev.previewtunnel.ingress.status.StatusLine;
import dev.previewtunnel.mux.wire.TunnelError;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * What the status page and the error pages of an {@code open} session know beyond the ingress: the SSH link's
 * state, the remote's listening ports, the renewals, and the fix for each error in this host's words (issue 19,
 * items 7 and 8). Read on the event loop: every method but the two returning futures answers from memory.
 */
final class SshFrontDoor implements FrontDoor {
    private final String host;
    private final String sessionId;
    private final SshLink link;
    private final GrantRenewals renewals;
    /** This desktop's own listeners (the proxy, the forward): listed too when the SSH host is this machine. */
    private final Set<Integer> ownPorts;

    SshFrontDoor(String host, String sessionId, SshLink link, GrantRenewals renewals, Set<Integer> ownPorts) {
        this.ownPorts = Set.copyOf(ownPorts);
        this.host = host;
        this.sessionId = sessionId;
        this.link = link;
        this.renewals = renewals;
    }

    @Override
    public List<StatusLine> status(String session) {
        List<StatusLine> lines = new ArrayList<>();
        SshLink.Status s = link.status();
        lines.add(new StatusLine("SSH", describe(s), s.state() == SshLink.State.UP));
        if (sessionId.equals(session)) {
            renewals.expiries().forEach((target, expiry) -> {
                String problem = renewals.problem(target);
                lines.add(new StatusLine("Grant for " + target, problem != null ? problem
                        : "valid until " + expiry + ", renewed automatically", problem == null));
            });
        }
        return lines;
    }

    @Override
    public CompletableFuture<List<Integer>> discoveredPorts(String session) {
        if (!sessionId.equals(session)) {
            return CompletableFuture.completedFuture(List.of());
        }
        Set<String> open = renewals.expiries().keySet();
        return link.control().ports().thenApply(ports -> ports.stream()
                .map(RemotePort::port)
                .filter(p -> !open.contains(OpenSession.target(p)) && !ownPorts.contains(p))
                .distinct().sorted().toList());
    }

    @Override
    public CompletableFuture<URI> openPort(String session, int port) {
        if (!sessionId.equals(session)) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("not this session's remote"));
        }
        if (port < 1 || port > 65535) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("not a port: " + port));
        }
        return renewals.keep(OpenSession.target(port)).thenApply(g -> OpenSession.url(port));
    }

    @Override
    public String fix(TunnelError error, String authority) {
        return switch (error) {
            case TARGET_REFUSED, TARGET_UNREACHABLE, DIAL_TIMEOUT -> "Start the dev server on " + host
                    + " so that it listens on " + authority + " there (for Vite: npm run dev); this page reloads "
                    + "when it answers.";
            case GATEWAY_UNREACHABLE, GATEWAY_TIMEOUT, SHUTTING_DOWN -> linkFix();
            case GRANT_EXPIRED -> {
                String problem = renewals.problem(targetOf(authority));
                yield problem == null ? "A new grant is being minted over SSH; this page reloads when it is in place."
                        : problem + ". " + linkFix();
            }
            case NOT_GRANTED -> "If something listens on port " + portOf(authority) + " on " + host + ", open it "
                    + "from the status page, http://preview.localhost/ (it lists the ports listening there), or add "
                    + "--port " + portOf(authority) + " to the desktop-ingress open command.";
            default -> null;
        };
    }

    @Override
    public String renewalProblem(String session, String target) {
        return sessionId.equals(session) ? renewals.problem(targetOf(target)) : null;
    }

    private String linkFix() {
        SshLink.Status s = link.status();
        if (s.state() == SshLink.State.UP) {
            return "The SSH link to " + host + " is up again; this page reloads by itself.";
        }
        return "desktop-ingress is reconnecting to " + host + " over SSH" + (s.attempt() > 0 ? " (attempt "
                + s.attempt() + ")" : "") + (s.lastError() == null ? "" : "; last error: " + s.lastError())
                + ". Check that 'ssh " + host + "' works from this machine. This page reloads when the link is back.";
    }

    private static String describe(SshLink.Status s) {
        return switch (s.state()) {
            case UP -> "connected";
            case CONNECTING -> "connecting";
            case RECONNECTING -> "reconnecting" + (s.attempt() > 0 ? " (attempt " + s.attempt() + ")" : "")
                    + (s.nextRetry() == null ? "" : ", next try at " + s.nextRetry())
                    + (s.lastError() == null ? "" : "; last error: " + s.lastError());
            case CLOSED -> "closed";
        };
    }

    /** localhost:P, 127.0.0.1:P and [::1]:P all reach the grant for localhost:P: the renewals know it by that. */
    private static String targetOf(String authority) {
        String port = portOf(authority);
        return port.chars().allMatch(Character::isDigit) && !port.isEmpty() ? "localhost:" + port : authority;
    }

    private static String portOf(String authority) {
        int colon = authority.lastIndexOf(':');
        return colon < 0 ? "PORT" : authority.substring(colon + 1);
    }
}
