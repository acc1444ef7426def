package dev.previewtunnel.ingress.session;

import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.mux.wire.Authority;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Virtual hosts: deterministic default names that include the host, one target per virtual host. */
class AuthorityMapTest {
    @TempDir
    static Path keys;
    static GrantIssuer issuer;

    @BeforeAll
    static void keys() throws Exception {
        issuer = new GrantIssuer(KeyDirectory.init(keys.resolve("k")).signingKey(), Clock.systemUTC());
    }

    private static String grant(String environment, String host, int port) {
        return issuer.issueGrant(GrantSpec.tcp(environment, "s", host, port), Duration.ofMinutes(5));
    }

    @Test
    void defaultNamesIncludeTheHostExceptForLocalhost() {
        assertEquals("p5173", AuthorityMap.defaultName(new Authority("localhost", 5173)));
        assertEquals("127-0-0-1-p5173", AuthorityMap.defaultName(new Authority("127.0.0.1", 5173)));
        assertEquals("api-internal-p8080", AuthorityMap.defaultName(new Authority("api.internal", 8080)));
        String longName = AuthorityMap.defaultName(new Authority("a".repeat(70) + ".example", 65535));
        assertEquals(63, longName.length(), longName);
        assertTrue(longName.endsWith("-p65535"), longName);
    }

    @Test
    void twoHostsOnOnePortGetTwoVirtualHostsEachRoutingToItsOwnTarget() {
        AuthorityMap map = new AuthorityMap();
        AuthorityMap.Entry api = map.add(grant("env", "api.internal", 8080));
        AuthorityMap.Entry db = map.add(grant("env", "db.internal", 8080));
        assertEquals(new Authority("api-internal-p8080.env.preview.localhost", 8080), api.virtualHost());
        assertEquals(new Authority("db-internal-p8080.env.preview.localhost", 8080), db.virtualHost());
        Route toApi = map.route(api.virtualHost()).orElseThrow();
        assertEquals(new Authority("api.internal", 8080), toApi.target());
        assertEquals("env", toApi.environment());
        assertEquals(new Authority("db.internal", 8080), map.route(db.virtualHost()).orElseThrow().target());
    }

    @Test
    void aNameTakenByAnotherTargetIsRefusedAndTheHolderKeepsIt() {
        AuthorityMap map = new AuthorityMap("dev.localhost");
        AuthorityMap.Entry first = map.add(grant("env", "api.internal", 8080), "web");
        String second = grant("env", "db.internal", 8080);
        VirtualHostTakenException e = assertThrows(VirtualHostTakenException.class, () -> map.add(second, "web"));
        assertEquals("virtual host web.env.dev.localhost:8080 is already taken by grant " + first.grantId()
                + " for api.internal:8080; attach this grant under another name", e.getMessage());
        assertFalse(e.getMessage().contains(second), "never the grant");
        assertEquals(1, map.entries().size());
        assertEquals(new Authority("api.internal", 8080),
                map.route(first.virtualHost()).orElseThrow().target());
        // The same name in another environment is another virtual host.
        assertEquals(new Authority("web.other.dev.localhost", 8080),
                map.add(grant("other", "db.internal", 8080), "web").virtualHost());
        // A newer grant for the same target under the same name replaces the older one (refresh).
        AuthorityMap.Entry fresh = map.add(grant("env", "api.internal", 8080), "web");
        assertEquals(2, map.entries().size());
        assertEquals(fresh.grantId(), map.route(first.virtualHost()).orElseThrow().grantId());
    }

    @Test
    void replaceSwapsAnAttachedGrantDefersToAnEarlierRefreshAndNeverUndoesADetach() {
        AuthorityMap map = new AuthorityMap();
        AuthorityMap.Entry old = map.add(grant("env", "localhost", 5173));
        String first = grant("env", "localhost", 5173);
        String second = grant("env", "localhost", 5173);

        // The first refresh replaces the old grant.
        AuthorityMap.Entry fresh = map.replace(old.grantId(), first, null).orElseThrow();
        assertFalse(map.hasGrant(old.grantId()));
        assertTrue(map.hasGrant(fresh.grantId()));
        // A second request refreshing the same old grant gets the first one's entry; its own grant is not attached.
        AuthorityMap.Entry again = map.replace(old.grantId(), second, null).orElseThrow();
        assertEquals(fresh.grantId(), again.grantId());
        assertEquals(1, map.entries().size());
        // Detached: nothing serves the target any more, and a late refresh does not bring it back.
        assertTrue(map.removeGrant(fresh.grantId()));
        assertTrue(map.replace(fresh.grantId(), second, null).isEmpty());
        assertTrue(map.entries().isEmpty());
        assertTrue(map.current(new Authority("localhost", 5173), "env").isEmpty());
    }

    @Test
    void suffixesAreLowerCaseDnsNames() {
        assertTrue(AuthorityMap.isValidSuffix("preview.localhost"));
        assertTrue(AuthorityMap.isValidSuffix("localhost"));
        assertTrue(AuthorityMap.isValidSuffix("a-1.dev.localhost"));
        assertFalse(AuthorityMap.isValidSuffix("Preview.localhost"));
        assertFalse(AuthorityMap.isValidSuffix("bad_label.localhost"));
        assertFalse(AuthorityMap.isValidSuffix("-x.localhost"));
        assertFalse(AuthorityMap.isValidSuffix("x..localhost"));
        assertFalse(AuthorityMap.isValidSuffix(".localhost"));
        assertFalse(AuthorityMap.isValidSuffix("127.0.0.1"));
        assertFalse(AuthorityMap.isValidSuffix(""));
        assertFalse(AuthorityMap.isValidSuffix("a".repeat(64) + ".localhost"));
    }
}
