package dev.previewtunnel.gateway.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.cli.UnixSocketFile;
import dev.previewtunnel.gateway.cli.CliHarness.RunningServe;
import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.wire.Authority;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.StandardProtocolFamily;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;

import static dev.previewtunnel.cli.InProcessCli.assertNoSecrets;
import static dev.previewtunnel.gateway.cli.CliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code serve --listen unix:PATH}: nothing listens on the network; the socket file is owner-only, reached through a
 * forward (here an in-process stand-in for {@code ssh -L PORT:PATH}), replaced when stale, refused when live.
 */
class UnixSocketServeTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TRANSPORT = "ptun.transport";

    @TempDir
    Path tmp;
    String keys;
    Path socket;

    @BeforeEach
    void initKeys() {
        keys = tmp.resolve("keys").toString();
        assertEquals(0, run("keys", "init", "--dir", keys).exitCode());
        socket = tmp.resolve("run").resolve("gw.sock"); // "run" does not exist yet: serve creates it rwx------
    }

    /** With each transport: epoll binds Netty's DomainSocketAddress, NIO the JDK's (Transports). */
    @ParameterizedTest
    @ValueSource(strings = {"epoll", "nio"})
    void servesAStreamThroughAForwardToItsOwnerOnlySocket(String transport) throws Exception {
        // The CI machines are Linux x86_64/aarch64, where the native transport must load (NativeLibrariesTest).
        assertTrue(transport.equals("nio") || Epoll.isAvailable(), () -> "native epoll: " + Epoll.unavailabilityCause());
        String token = run("token", "issue", "--keys", keys, "--env", "env-1", "--ttl", "5m").outLines().get(0);
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try (ServerSocket target = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"))) {
            target.setSoTimeout(10_000);
            Authority authority = new Authority("127.0.0.1", target.getLocalPort());
            String grant = run("grant", "issue", "--keys", keys, "--env", "env-1", "--session", "s-1",
                    "--target", authority.toString()).outLines().get(0);
            String before = System.getProperty(TRANSPORT);
            System.setProperty(TRANSPORT, transport); // read once, when the gateway starts
            RunningServe serve;
            try {
                serve = RunningServe.start("serve", "--keys", keys, "--env", "env-1", "--listen", "unix:" + socket,
                        "--drain-timeout", "2s");
            } finally {
                if (before == null) {
                    System.clearProperty(TRANSPORT);
                } else {
                    System.setProperty(TRANSPORT, before);
                }
            }
            TunnelConnection connection;
            try (UnixSocketForwarder forward = new UnixSocketForwarder(socket)) {
                assertNotNull(serve.command.server(), serve.captured::err);
                JsonNode ready = JSON.readTree(serve.captured.out());
                assertEquals("unix:" + socket, ready.get("listen").asText());
                assertEquals("/tunnel", ready.get("path").asText());
                assertNull(ready.get("url"), "a Unix socket has no URL of its own: " + ready);
                assertEquals(transport, ready.get("transport").asText());
                assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)));
                assertEquals("rwx------",
                        PosixFilePermissions.toString(Files.getPosixFilePermissions(socket.getParent())));
                assertEquals(UnixSocketFile.State.LIVE, UnixSocketFile.probe(socket));

                TunnelClient client = new TunnelClient(group, NioSocketChannel.class, MuxSettings.defaults());
                connection = CliHarness.connect(client, URI.create("ws://127.0.0.1:" + forward.port() + "/tunnel"),
                        token);
                CliHarness.openAndSeeDialed(connection, authority, grant, target);
            } finally {
                serve.close();
            }
            assertEquals(0, serve.awaitExit(), serve.captured::err);
            assertTrue(connection.channel().closeFuture().await(15, TimeUnit.SECONDS));
            assertFalse(Files.exists(socket, LinkOption.NOFOLLOW_LINKS), "the socket file is removed at stop");
            assertNoSecrets(serve.captured.out(), serve.captured.err(), token, grant);
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    @Test
    void aStaleSocketIsReplacedALiveOneRefused() throws Exception {
        Files.createDirectories(socket.getParent());
        Files.setPosixFilePermissions(socket.getParent(), PosixFilePermissions.fromString("rwx------"));
        try (ServerSocketChannel live = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            live.bind(UnixDomainSocketAddress.of(socket));
            Result refused = run("serve", "--keys", keys, "--env", "env-1", "--listen", "unix:" + socket);
            assertEquals(2, refused.exitCode(), refused::toString);
            assertEquals("", refused.out());
            assertTrue(refused.cliErrorLine().startsWith("env-gateway: cannot listen on unix:" + socket
                    + ": a process already answers on it"), refused::toString);
            assertTrue(Files.exists(socket, LinkOption.NOFOLLOW_LINKS), "a live socket is left alone");
        } // closed: the JDK leaves the file behind, as a crashed gateway would

        assertTrue(Files.exists(socket, LinkOption.NOFOLLOW_LINKS));
        RunningServe serve = RunningServe.start("serve", "--keys", keys, "--env", "env-1",
                "--listen", "unix:" + socket);
        try {
            assertNotNull(serve.command.server(), serve.captured::err);
            assertTrue(serve.captured.err().contains("replaced the stale socket file"), serve.captured::err);
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)));
        } finally {
            serve.close();
        }
        assertEquals(0, serve.awaitExit(), serve.captured::err);
        assertFalse(Files.exists(socket, LinkOption.NOFOLLOW_LINKS));
    }

    @Test
    void anythingButASocketOrAnOpenDirectoryIsRefused() throws Exception {
        Files.createDirectories(socket.getParent());
        Files.setPosixFilePermissions(socket.getParent(), PosixFilePermissions.fromString("rwx------"));
        Files.writeString(socket, "not a socket");
        Result notASocket = run("serve", "--keys", keys, "--env", "env-1", "--listen", "unix:" + socket);
        assertEquals(3, notASocket.exitCode(), notASocket::toString);
        assertTrue(notASocket.cliErrorLine().contains("the path exists and is not a socket"), notASocket::toString);
        assertEquals("not a socket", Files.readString(socket), "never replaced");

        Files.delete(socket);
        Files.setPosixFilePermissions(socket.getParent(), PosixFilePermissions.fromString("rwxrwxrwx"));
        Result open = run("serve", "--keys", keys, "--env", "env-1", "--listen", "unix:" + socket);
        assertEquals(3, open.exitCode(), open::toString);
        assertTrue(open.cliErrorLine().contains("is writable by group/others"), open::toString);
        assertFalse(Files.exists(socket, LinkOption.NOFOLLOW_LINKS));

        Result relative = run("serve", "--keys", keys, "--env", "env-1", "--listen", "unix:gw.sock");
        assertEquals(1, relative.exitCode(), relative::toString);
        assertTrue(relative.err().contains("--listen must be HOST:PORT or unix:/absolute/path"), relative::toString);
    }
}
