package dev.previewtunnel.ingress.session;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.json.JsonTrees;
import io.netty.util.NetUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;

/**
 * What outlives one ingress process: each session's credential (its owner-only credentials file, rotated only by
 * {@code session rotate}) and, in the owner-only {@code sessions.json}, the sessions' ids, egress policies and
 * attached grants and the proxy port last listened on. A browser started before a restart keeps its proxy port
 * and credential, so it never sees a 407 it cannot answer. Every write is atomic (temp file + move).
 */
public final class SessionStore {
    public static final String FILE = "sessions.json";
    private static final Logger log = LoggerFactory.getLogger(SessionStore.class);

    private final Path dir;

    public SessionStore(Path dir) {
        this.dir = dir;
    }

    public Path directory() {
        return dir;
    }

    /** A session as saved: id, egress policy and grants (each with its name, or null). */
    public record Saved(String id, EgressPolicy egress, List<SavedGrant> grants) {
    }

    public record SavedGrant(String grant, String name) {
    }

    /** What {@code sessions.json} holds; empty when there is none (first run) or it is unreadable. */
    public record Snapshot(Integer proxyPort, List<Saved> sessions) {
        static final Snapshot EMPTY = new Snapshot(null, List.of());
    }

    public Snapshot load() {
        JsonNode root;
        try {
            root = JsonTrees.parse(Files.readString(dir.resolve(FILE)));
        } catch (NoSuchFileException e) {
            return Snapshot.EMPTY;
        } catch (IOException | RuntimeException e) {
            // Never echo the content: it holds grants.
            log.warn("ignoring unreadable {} ({}); sessions start afresh", dir.resolve(FILE),
                    e.getClass().getSimpleName());
            return Snapshot.EMPTY;
        }
        Integer port = root.path("proxyPort").canConvertToInt() ? root.path("proxyPort").asInt() : null;
        List<Saved> sessions = new ArrayList<>();
        for (JsonNode s : root.path("sessions")) {
            String id = s.path("id").asText("");
            if (!id.matches("[A-Za-z0-9._-]{1,64}")) {
                continue;
            }
            EgressPolicy egress = "direct".equals(s.path("egress").asText()) ? EgressPolicy.DIRECT : EgressPolicy.DENY;
            List<SavedGrant> grants = new ArrayList<>();
            for (JsonNode g : s.path("grants")) {
                if (g.path("grant").isTextual()) {
                    grants.add(new SavedGrant(g.get("grant").asText(),
                            g.path("name").isTextual() ? g.get("name").asText() : null));
                }
            }
            sessions.add(new Saved(id, egress, grants));
        }
        return new Snapshot(port, sessions);
    }

    /**
     * The session {@code id} with the credential its credentials file holds, or a new credential when the file is
     * missing or not this session's (the caller writes the file): the credential is stable for the life of the
     * session, which ends only with {@code session close}.
     */
    public BrowserSession restoreOrCreate(String id, String suffix) {
        Path file = StateFiles.credentialsFile(dir, id);
        if (Files.isRegularFile(file)) {
            try {
                JsonNode cred = JsonTrees.parse(Files.readString(file));
                if (("ptun-" + id).equals(cred.path("username").asText())) {
                    return BrowserSession.restore(id, suffix, cred.path("password").asText());
                }
            } catch (IOException | IllegalArgumentException e) {
                // fall through: a new credential replaces an unreadable one (the content is never shown)
            }
            log.warn("credentials file {} is unreadable or not session {}'s; a new credential replaces it", file, id);
        }
        return BrowserSession.create(id, suffix);
    }

    /** Re-attaches saved grants that have not expired; a grant that no longer reads is dropped (never shown). */
    public static void reattach(BrowserSession session, List<SavedGrant> grants) {
        Instant now = Instant.now();
        for (SavedGrant g : grants) {
            try {
                if (UnverifiedGrantView.decode(g.grant()).expiresAt().isAfter(now)) {
                    session.authorities().add(g.grant(), g.name());
                }
            } catch (RuntimeException e) {
                log.info("session {}: a saved grant could not be attached again ({})", session.id(),
                        e.getClass().getSimpleName());
            }
        }
    }

    /** Writes {@code sessions.json} for these sessions and the proxy address now listened on. */
    public synchronized void save(InetSocketAddress proxy, Collection<BrowserSession> sessions) throws IOException {
        ObjectNode root = JsonTrees.object();
        if (proxy != null) {
            root.put("proxy", NetUtil.toSocketAddressString(proxy)).put("proxyPort", proxy.getPort());
        }
        ArrayNode list = root.putArray("sessions");
        for (BrowserSession s : sessions) {
            ObjectNode node = list.addObject().put("id", s.id())
                    .put("egress", s.egress().name().toLowerCase(Locale.ROOT));
            ArrayNode grants = node.putArray("grants");
            for (AuthorityMap.Entry e : s.authorities().entries()) {
                grants.addObject().put("grant", e.grant()).put("name", e.name());
            }
        }
        StateFiles.writeOwnerOnly(dir.resolve(FILE), JsonTrees.write(root) + "\n");
    }

    /** {@link #save} for callers that cannot handle the failure: logged (without content), not thrown. */
    public void saveQuietly(InetSocketAddress proxy, Collection<BrowserSession> sessions) {
        try {
            save(proxy, sessions);
        } catch (IOException | RuntimeException e) {
            log.warn("could not write {} ({}); sessions changed since will not survive a restart",
                    dir.resolve(FILE), e.getClass().getSimpleName());
        }
    }

    /**
     * Where to listen: the configured address, but when it asks for any port (0) and an earlier run listened on
     * port P of the same host, P again if it is free, so browsers configured with it keep working.
     */
    public static InetSocketAddress preferredListen(InetSocketAddress configured, Integer savedPort) {
        if (configured.getPort() != 0 || savedPort == null || savedPort <= 0 || savedPort > 65535) {
            return configured;
        }
        InetSocketAddress again = new InetSocketAddress(configured.getAddress(), savedPort);
        try (ServerSocket probe = new ServerSocket()) {
            probe.setReuseAddress(true);
            probe.bind(again);
        } catch (IOException e) {
            log.warn("the proxy port of the previous run, {}, is taken; listening on a new port: browsers "
                    + "started before must be pointed at it", savedPort);
            return configured;
        }
        return again;
    }
}
