package dev.previewtunnel.gateway;

import dev.previewtunnel.grants.VerifiedGrant;
import io.netty.channel.Channel;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The streams open right now, indexed by grant id and by browser session, so that revoking either ends the
 * streams opened under it (an HMR WebSocket included), not only future ones.
 */
public final class LiveStreams {
    private final ConcurrentHashMap<String, Set<Channel>> byGrant = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Set<Channel>> bySession = new ConcurrentHashMap<>();
    /** Every live stream with what an audit line about it names (a drain says which streams it cut). */
    private final ConcurrentHashMap<Channel, Described> all = new ConcurrentHashMap<>();

    /** What a stream is, for audit lines: its connection, session, grant id and requested target. */
    public record Described(String connection, String session, String jti, String target) {
    }

    void register(VerifiedGrant grant, Channel stream, String connection, String target) {
        add(byGrant, grant.jti(), stream);
        add(bySession, grant.session(), stream);
        all.put(stream, new Described(connection, grant.session(), grant.jti(), target));
        stream.closeFuture().addListener(f -> {
            remove(byGrant, grant.jti(), stream);
            remove(bySession, grant.session(), stream);
            all.remove(stream);
        });
    }

    /** Every live stream right now (a copy). */
    public List<Channel> all() {
        return List.copyOf(all.keySet());
    }

    /** What {@code stream} is, or null once it closed. */
    public Described describe(Channel stream) {
        return all.get(stream);
    }

    /** Closes (resets) every live stream opened with this grant id; returns how many. */
    public int closeGrant(String jti) {
        return closeAll(byGrant.get(jti));
    }

    /** Closes (resets) every live stream of this browser session; returns how many. */
    public int closeSession(String session) {
        return closeAll(bySession.get(session));
    }

    /** The live streams of one browser session right now (a copy). */
    public List<Channel> ofSession(String session) {
        Set<Channel> streams = bySession.get(session);
        return streams == null ? List.of() : List.copyOf(streams);
    }

    public int size() {
        return byGrant.values().stream().mapToInt(Set::size).sum();
    }

    private static int closeAll(Set<Channel> streams) {
        if (streams == null) {
            return 0;
        }
        List<Channel> copy = new ArrayList<>(streams);
        copy.forEach(ch -> StreamEnding.closeFor(ch, StreamEnding.REVOKED));
        return copy.size();
    }

    private static void add(ConcurrentHashMap<String, Set<Channel>> map, String key, Channel ch) {
        map.computeIfAbsent(key, k -> ConcurrentHashMap.newKeySet()).add(ch);
    }

    private static void remove(ConcurrentHashMap<String, Set<Channel>> map, String key, Channel ch) {
        map.computeIfPresent(key, (k, set) -> {
            set.remove(ch);
            return set.isEmpty() ? null : set;
        });
    }
}
