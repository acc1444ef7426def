package dev.previewtunnel.gateway.hostile;

import dev.previewtunnel.cli.InProcessCli;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayLimits;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.gateway.RevocationStore;
import dev.previewtunnel.gateway.cli.GatewayMain;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.GrantVerifier;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.grants.RevocationList;
import dev.previewtunnel.grants.VerifierPolicy;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.relay.Transports;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxSettings;
import dev.previewtunnel.mux.wire.TunnelError;
import dev.previewtunnel.mux.wire.TunnelStreamException;
import dev.previewtunnel.testing.ForeignOwner;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16 item 8: revocations live in the gateway's state directory, so a restarted gateway still refuses a
 * revoked connection token and a revoked session's grants; the file is read back strictly (a corrupt or
 * loose-mode file, or a state directory others can write, refuses the start with one line, exit 3); the list is
 * bounded and refuses, rather than forgets, at its limit.
 */
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class RevocationPersistenceTest {
    private static final String ENV = "env-p";
    private static final Authority TARGET = new Authority("127.0.0.1", 9); // never dialed: refused before

    @TempDir
    Path tmp;

    private final Transports transports = Transports.best();
    private EventLoopGroup clientGroup;
    private KeyDirectory keys;
    private GrantIssuer issuer;
    private Path state;

    @BeforeEach
    void setUp() throws Exception {
        clientGroup = transports.newGroup(1, "revocation-test-client");
        keys = KeyDirectory.init(tmp.resolve("keys"));
        issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        state = tmp.resolve("state");
    }

    @AfterEach
    void tearDown() {
        clientGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private GatewayServer start(GatewayLimits limits) throws Exception {
        GatewayConfig config = GatewayConfig.defaults(ENV, new InetSocketAddress("127.0.0.1", 0)).withLimits(limits);
        return GatewayServer.start(config, keys.verificationKeys(), null, new SimpleMeterRegistry(),
                RevocationStore.open(state), Clock.systemUTC());
    }

    private Future<TunnelConnection> connect(GatewayServer gateway, String token) {
        return new TunnelClient(clientGroup, transports.socketChannel(), MuxSettings.defaults())
                .connect(URI.create(gateway.url(false)), token, null, Duration.ofSeconds(5));
    }

    @Test
    void revocationsSurviveARestart() throws Exception {
        String revokedToken = issuer.issueConnectionToken(ENV, Duration.ofHours(24));
        String goodToken = issuer.issueConnectionToken(ENV, Duration.ofHours(24));
        String sessionGrant = issuer.issueGrant(GrantSpec.tcp(ENV, "s-revoked", TARGET.host(), TARGET.port()),
                Duration.ofMinutes(10));

        GatewayServer first = start(GatewayLimits.defaults());
        try {
            Future<TunnelConnection> before = connect(first, revokedToken);
            assertTrue(before.await(10, TimeUnit.SECONDS) && before.isSuccess(), () -> "connect: " + before.cause());
            before.getNow().close();
            first.revokeGrant(new GrantVerifier(keys.verificationKeys(), Clock.systemUTC(), VerifierPolicy.defaults())
                    .verifyConnectionToken(revokedToken, ENV).jti());
            first.revokeSession("s-revoked");
        } finally {
            first.close();
        }
        assertEquals("rw-------", PosixFilePermissions.toString(
                Files.getPosixFilePermissions(state.resolve(RevocationStore.FILE))));

        GatewayServer second = start(GatewayLimits.defaults());
        try {
            Future<TunnelConnection> refused = connect(second, revokedToken);
            assertTrue(refused.await(10, TimeUnit.SECONDS));
            assertFalse(refused.isSuccess(), "a token revoked before the restart is still refused");

            Future<TunnelConnection> ok = connect(second, goodToken);
            assertTrue(ok.await(10, TimeUnit.SECONDS) && ok.isSuccess(), () -> "connect: " + ok.cause());
            TunnelConnection connection = ok.getNow();
            try {
                Future<Http2StreamChannel> open = connection.openStream(TARGET, sessionGrant, Duration.ofSeconds(5));
                assertTrue(open.await(10, TimeUnit.SECONDS));
                assertFalse(open.isSuccess(), "a grant of a session revoked before the restart is refused");
                assertEquals(TunnelError.GRANT_REVOKED,
                        assertInstanceOf(TunnelStreamException.class, open.cause()).error());
            } finally {
                connection.close();
            }
        } finally {
            second.close();
        }
    }

    @Test
    void revokingAConnectionTokenClosesItsOpenConnectionsOnly() throws Exception {
        String revokedToken = issuer.issueConnectionToken(ENV, Duration.ofHours(24));
        String goodToken = issuer.issueConnectionToken(ENV, Duration.ofHours(24));
        GatewayServer gateway = start(GatewayLimits.defaults());
        try {
            Future<TunnelConnection> doomed = connect(gateway, revokedToken);
            Future<TunnelConnection> kept = connect(gateway, goodToken);
            assertTrue(doomed.await(10, TimeUnit.SECONDS) && doomed.isSuccess(), () -> "connect: " + doomed.cause());
            assertTrue(kept.await(10, TimeUnit.SECONDS) && kept.isSuccess(), () -> "connect: " + kept.cause());
            gateway.revokeGrant(new GrantVerifier(keys.verificationKeys(), Clock.systemUTC(),
                    VerifierPolicy.defaults()).verifyConnectionToken(revokedToken, ENV).jti());
            assertTrue(doomed.getNow().channel().closeFuture().await(5, TimeUnit.SECONDS),
                    "the revoked token's open connection is closed, not only its future upgrades refused");
            assertTrue(kept.getNow().channel().isActive(), "another token's connection is left alone");
            kept.getNow().close();
        } finally {
            gateway.close();
        }
    }

    @Test
    void aFullListRefusesTheNextRevocationAndKeepsTheOthers() throws Exception {
        GatewayLimits two = GatewayLimits.defaults().withMaxRevocations(2);
        GatewayServer gateway = start(two);
        try {
            gateway.revokeGrant("jti-1");
            gateway.revokeSession("s-1");
            assertThrows(RevocationList.Full.class, () -> gateway.revokeGrant("jti-2"));
        } finally {
            gateway.close();
        }
        assertEquals(2, RevocationStore.open(state).restored().size());
    }

    @Test
    void aCorruptRevocationFileRefusesTheStartWithOneLine() throws Exception {
        Files.createDirectories(state, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path file = state.resolve(RevocationStore.FILE);
        Files.writeString(file, "{\"version\":1,\"revocations\":[{\"kind\":\"id\",\"id\":\"x\"}]}\n");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        assertRefused("is corrupt");

        Files.writeString(file, "{\"version\":1,\"revocations\":[],\"version\":1}\n"); // duplicate key
        assertRefused("is corrupt");
    }

    @Test
    void aLooseModeRevocationFileRefusesTheStart() throws Exception {
        Files.createDirectories(state, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path file = state.resolve(RevocationStore.FILE);
        Files.writeString(file, "{\"version\":1,\"revocations\":[]}\n"); // well-formed, but others may write it
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-rw-r--"));
        assertRefused("open to group/others");
    }

    @Test
    void aStateDirectoryOthersMayWriteOrOwnRefusesTheStart() throws Exception {
        Files.createDirectories(state);
        Files.setPosixFilePermissions(state, PosixFilePermissions.fromString("rwxrwx---"));
        assertRefused("writable by group/others");

        Files.setPosixFilePermissions(state, PosixFilePermissions.fromString("rwx------"));
        Files.setAttribute(state, "unix:uid", Integer.valueOf(ForeignOwner.uid()));
        assertRefused("belongs to uid " + ForeignOwner.uid());
    }

    /** Runs the real 'serve' main in-process with the state directory; it must refuse before binding. */
    private void assertRefused(String expected) {
        Result r = InProcessCli.run(new GatewayMain(), "env-gateway: ", "serve", "--keys", keys.dir().toString(),
                "--env", ENV, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--state-dir",
                state.toString());
        assertEquals(3, r.exitCode(), r::toString);
        String line = r.cliErrorLine();
        assertTrue(line.contains(expected) && line.contains(state.toString()), line); // cliErrorLine: one line
    }
}
