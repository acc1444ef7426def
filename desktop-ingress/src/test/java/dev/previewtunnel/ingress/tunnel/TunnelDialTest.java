package dev.previewtunnel.ingress.tunnel;

import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnectException;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.wire.MuxSettings;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.Future;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * No token, no dial: while an SSH forward is down its local port may belong to anyone, who must get neither the
 * token nor a browser's request (docs/desktop-ingress.md, "One command: open").
 */
class TunnelDialTest {
    @Test
    void withoutATokenNothingIsDialled() throws Exception {
        NioEventLoopGroup group = new NioEventLoopGroup(1);
        try (ServerSocket squatter = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            squatter.setSoTimeout(300);
            TunnelClient client = new TunnelClient(group, NioSocketChannel.class, MuxSettings.defaults());
            TunnelDial dial = new TunnelDial(client, URI.create("ws://127.0.0.1:" + squatter.getLocalPort() + "/tunnel"),
                    () -> null, null, Duration.ofSeconds(5));
            Future<TunnelConnection> attempt = dial.connect(group.next()).await();
            assertFalse(attempt.isSuccess());
            assertInstanceOf(TunnelConnectException.class, attempt.cause());
            assertTrue(attempt.cause().getMessage().contains("not dialling"), attempt.cause().getMessage());
            // Nobody knocked: an accept within the timeout would mean a connection was made.
            assertThrows(SocketTimeoutException.class, squatter::accept);
        } finally {
            group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).sync();
        }
    }
}
