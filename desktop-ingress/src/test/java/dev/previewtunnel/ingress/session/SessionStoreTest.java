package dev.previewtunnel.ingress.session;

import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What survives an ingress restart, file by file: sessions.json, the credentials, the proxy port. */
class SessionStoreTest {
    @TempDir
    static Path keys;
    static GrantIssuer issuer;

    @TempDir
    Path dir;

    @BeforeAll
    static void keys() throws Exception {
        issuer = new GrantIssuer(KeyDirectory.init(keys.resolve("k")).signingKey(), Clock.systemUTC());
    }

    @Test
    void sessionsTheirEgressAndUnexpiredGrantsRoundTripOwnerOnly() throws Exception {
        SessionStore store = new SessionStore(dir);
        String live = issuer.issueGrant(GrantSpec.tcp("e", "web", "localhost", 5173), Duration.ofMinutes(5));
        String expired = issuer.issueGrant(GrantSpec.tcp("e", "web", "localhost", 8080), Duration.ofSeconds(1));
        BrowserSession web = BrowserSession.create("web", AuthorityMap.DEFAULT_SUFFIX).egress(EgressPolicy.DIRECT);
        web.authorities().add(live, "app");
        web.authorities().add(expired);
        store.save(new InetSocketAddress("127.0.0.1", 43128), List.of(web));
        assertEquals("rw-------", PosixFilePermissions.toString(
                Files.getPosixFilePermissions(dir.resolve(SessionStore.FILE))));

        SessionStore.Snapshot back = store.load();
        assertEquals(43128, back.proxyPort());
        assertEquals(1, back.sessions().size());
        SessionStore.Saved saved = back.sessions().get(0);
        assertEquals("web", saved.id());
        assertEquals(EgressPolicy.DIRECT, saved.egress());
        assertEquals(2, saved.grants().size());

        // Attached again only while unexpired, under the name it had.
        String expiredId = web.authorities().entries().stream().filter(e -> e.grant().equals(expired)).findFirst()
                .orElseThrow().grantId();
        dev.previewtunnel.testing.Await.until("the short grant expired", Duration.ofSeconds(10),
                () -> !dev.previewtunnel.grants.UnverifiedGrantView.decode(expired).expiresAt()
                        .isAfter(java.time.Instant.now()));
        BrowserSession restored = BrowserSession.create("web", AuthorityMap.DEFAULT_SUFFIX);
        SessionStore.reattach(restored, saved.grants());
        assertEquals(1, restored.authorities().entries().size(), "the expired grant is not attached again");
        assertEquals("app", restored.authorities().entries().get(0).name());
        assertTrue(!restored.authorities().hasGrant(expiredId));
    }

    @Test
    void aCredentialIsReadBackAndAForeignOrBrokenFileIsReplaced() throws Exception {
        SessionStore store = new SessionStore(dir);
        BrowserSession first = BrowserSession.create("web", AuthorityMap.DEFAULT_SUFFIX);
        StateFiles.writeCredentials(dir, first);
        BrowserSession again = store.restoreOrCreate("web", AuthorityMap.DEFAULT_SUFFIX);
        assertEquals(first.password(), again.password(), "the same credential after a restart");

        // A file naming another user, or not JSON: a new credential (the old content is never echoed).
        StateFiles.writeOwnerOnly(StateFiles.credentialsFile(dir, "web"),
                "{\"username\":\"ptun-other\",\"password\":\"" + first.password() + "\"}");
        assertNotEquals(first.password(), store.restoreOrCreate("web", AuthorityMap.DEFAULT_SUFFIX).password());
        StateFiles.writeOwnerOnly(StateFiles.credentialsFile(dir, "web"), "not json");
        assertTrue(store.restoreOrCreate("web", AuthorityMap.DEFAULT_SUFFIX).password().length() >= 16);
    }

    @Test
    void anUnreadableSessionsFileStartsAfresh() throws Exception {
        StateFiles.writeOwnerOnly(dir.resolve(SessionStore.FILE), "{\"sessions\": [ {\"id\": \"../x\"}, oops");
        SessionStore.Snapshot s = new SessionStore(dir).load();
        assertNull(s.proxyPort());
        assertTrue(s.sessions().isEmpty());
        StateFiles.writeOwnerOnly(dir.resolve(SessionStore.FILE), "{\"sessions\":[{\"id\":\"../x\"},{\"id\":\"ok\"}]}");
        assertEquals(List.of("ok"), new SessionStore(dir).load().sessions().stream().map(SessionStore.Saved::id)
                .toList(), "an id that is not a session id is skipped");
    }

    @Test
    void theSavedPortIsPreferredWhenAnyPortWouldDoAndFree() throws Exception {
        InetAddress loopback = InetAddress.getByName("127.0.0.1");
        InetSocketAddress any = new InetSocketAddress(loopback, 0);
        int free;
        try (ServerSocket s = new ServerSocket(0, 1, loopback)) {
            free = s.getLocalPort();
            // Taken: the configured address (any port) stands.
            assertEquals(any, SessionStore.preferredListen(any, free));
        }
        assertEquals(new InetSocketAddress(loopback, free), SessionStore.preferredListen(any, free));
        InetSocketAddress explicit = new InetSocketAddress(loopback, 3128);
        assertEquals(explicit, SessionStore.preferredListen(explicit, free), "an explicit port always wins");
        assertEquals(any, SessionStore.preferredListen(any, null), "nothing saved: any port");
    }
}
