package dev.previewtunnel.gateway;

import dev.previewtunnel.gateway.revocation.RevocationNotPersistedException;
import dev.previewtunnel.gateway.revocation.RevocationStore;
import dev.previewtunnel.gateway.revocation.Revocations;
import dev.previewtunnel.grants.RevocationList;
import dev.previewtunnel.grants.VerifiedGrant;
import dev.previewtunnel.grants.VerifierPolicy;
import dev.previewtunnel.local.audit.AuditLog;
import io.netty.channel.DefaultChannelId;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The revocation service on its own: a revocation is in force at once, closes the live streams and the tunnel
 * connections opened with what it revokes (and nothing else), and is written to the store; one the store cannot
 * write stays in force and says so.
 */
class RevocationsTest {
    @TempDir
    Path state;

    private final RevocationList list = new RevocationList(Clock.systemUTC(), VerifierPolicy.defaults());
    private final LiveStreams live = new LiveStreams();
    private final TunnelConnections connections = new TunnelConnections();

    private Revocations revocations(RevocationStore store) {
        return new Revocations(list, store, live, connections, new AuditLog("gateway"));
    }

    private EmbeddedChannel stream(String jti, String session) {
        Instant now = Instant.now();
        EmbeddedChannel stream = new EmbeddedChannel(DefaultChannelId.newInstance());
        live.register(new VerifiedGrant("e1", session, "127.0.0.1", 5173, "tcp", null, null, jti, "kid", now,
                now.plusSeconds(60)), stream, "c1", "127.0.0.1:5173");
        return stream;
    }

    private EmbeddedChannel connection(String tokenId) {
        // An id of its own: a ChannelGroup keys its channels by id, and EmbeddedChannels share one by default.
        EmbeddedChannel connection = new EmbeddedChannel(DefaultChannelId.newInstance());
        connections.add(connection, tokenId);
        return connection;
    }

    @Test
    void revokingAnIdClosesItsStreamsAndTheConnectionsOfThatTokenAndIsSaved() throws Exception {
        Revocations revocations = revocations(RevocationStore.open(state));
        EmbeddedChannel revoked = stream("g1", "s1");
        EmbeddedChannel bystander = stream("g2", "s1");
        EmbeddedChannel byToken = connection("t1");
        EmbeddedChannel otherToken = connection("t2");

        assertEquals(1, revocations.revokeGrant("g1"));
        assertTrue(list.isRevoked("g1"));
        assertFalse(revoked.isOpen());
        assertTrue(bystander.isOpen());

        assertEquals(0, revocations.revokeGrant("t1"), "a token has no streams of its own");
        assertFalse(byToken.isOpen());
        assertTrue(otherToken.isOpen());
        assertEquals(1, connections.size());
        assertEquals(List.of("g1", "t1"), RevocationStore.open(state).restored().stream()
                .map(RevocationList.Entry::id).toList());
        bystander.finishAndReleaseAll();
        otherToken.finishAndReleaseAll();
    }

    @Test
    void revokingASessionClosesEveryStreamOfIt() {
        Revocations revocations = revocations(null); // no store: in force until the process ends
        EmbeddedChannel a = stream("g1", "s1");
        EmbeddedChannel b = stream("g2", "s1");
        EmbeddedChannel other = stream("g3", "s2");

        assertEquals(2, revocations.revokeSession("s1"));
        assertFalse(a.isOpen() || b.isOpen());
        assertTrue(other.isOpen());
        assertEquals(1, live.size());
        other.finishAndReleaseAll();
    }

    @Test
    void aRevocationTheStoreCannotWriteIsInForceAndSaysSo() throws Exception {
        Revocations revocations = revocations(RevocationStore.open(state));
        // A non-empty directory where the file goes: the atomic move over it fails (even for root).
        Files.writeString(Files.createDirectories(state.resolve(RevocationStore.FILE)).resolve("x"), "x");
        EmbeddedChannel revoked = stream("g1", "s1");

        RevocationNotPersistedException e = assertThrows(RevocationNotPersistedException.class,
                () -> revocations.revokeGrant("g1"));
        assertTrue(e.getMessage().contains(RevocationStore.FILE) && e.getMessage().contains("until this gateway "
                + "restarts"), e.getMessage());
        assertTrue(list.isRevoked("g1"), "in force although not saved");
        assertFalse(revoked.isOpen());
    }
}
