package dev.previewtunnel.ingress.status;

import dev.previewtunnel.ingress.session.AuthorityMap;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.tunnel.EnvironmentPools;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.mux.wire.Authority;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What one session's status page shows, gathered from the ingress and its {@link FrontDoor}: that session's previews
 * only (another session's are never read), the tunnel, and the front door's lines, ports and the session's recent
 * errors. Holds no grant or credential: a preview names its URL, target and expiry.
 *
 * @param frontDoor       the front door's lines, or empty without one
 * @param discoveredPorts ports the front door found and this session may open; null when unknown (no front door)
 */
public record StatusFacts(String sessionId, List<Preview> previews, List<Tunnel> tunnels, List<StatusLine> frontDoor,
                         List<Integer> discoveredPorts, List<RecentErrors.Entry> errors, Instant now) {

    /** One granted preview: where to open it, its other address, what it reaches, and its grant's state. */
    public record Preview(String url, String virtualHostUrl, String target, String environment, Instant expiresAt,
                          String renewalProblem) {
    }

    /** One tunnel pool: its name, whether a connection is up, and its state in words. */
    public record Tunnel(String name, boolean connected, String words) {
    }

    public static StatusFacts collect(BrowserSession session, EnvironmentPools pools, FrontDoor frontDoor,
                                      List<Integer> discoveredPorts, RecentErrors errors, Instant now) {
        List<Preview> previews = new ArrayList<>();
        AuthorityMap map = session.authorities();
        for (AuthorityMap.Entry e : map.entries()) {
            previews.add(new Preview(url(map, e), "http://" + e.virtualHost() + "/", e.target().toString(),
                    e.view().environment(), e.view().expiresAt(),
                    frontDoor == null ? null : frontDoor.renewalProblem(session.id(), e.target().toString())));
        }
        List<Tunnel> tunnels = new ArrayList<>();
        tunnels.add(tunnel("gateway", pools.defaultPool().status()));
        for (Map.Entry<String, TunnelPool> p : pools.byEnvironment().entrySet()) {
            tunnels.add(tunnel("gateway of " + p.getKey(), p.getValue().status()));
        }
        return new StatusFacts(session.id(), previews, tunnels,
                frontDoor == null ? List.of() : List.copyOf(frontDoor.status(session.id())),
                discoveredPorts == null ? null : List.copyOf(discoveredPorts), errors.of(session.id()), now);
    }

    /** The loopback passthrough address when it reaches this very grant, else the virtual host. */
    private static String url(AuthorityMap map, AuthorityMap.Entry e) {
        Authority local = new Authority("localhost", e.target().port());
        boolean passthrough = map.route(local).map(r -> e.grantId().equals(r.grantId())).orElse(false);
        return "http://" + (passthrough ? local : e.virtualHost()) + "/";
    }

    private static Tunnel tunnel(String name, TunnelPool.Status s) {
        if (s.connected() > 0) {
            return new Tunnel(name, true, "connected (" + s.connected() + " of " + s.size() + " connections up)");
        }
        String words = "not connected" + (s.downSince() == null ? "" : " since " + Html.time(s.downSince()))
                + ", retrying";
        String why = FailureWords.of(s.lastError());
        return new Tunnel(name, false, why == null ? words : words + ": " + why);
    }
}
