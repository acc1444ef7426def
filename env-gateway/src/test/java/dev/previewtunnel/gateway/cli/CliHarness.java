package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.InProcessCli;
import dev.previewtunnel.cli.InProcessCli.Result;

import dev.previewtunnel.mux.client.TunnelClient;
import dev.previewtunnel.mux.client.TunnelConnection;
import dev.previewtunnel.mux.wire.Authority;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.util.concurrent.Future;

import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Runs the env-gateway CLI in-process through the shared {@link InProcessCli} harness. */
final class CliHarness {
    static final String ERROR_PREFIX = "env-gateway: ";

    private CliHarness() {
    }

    static Result run(String... args) {
        return InProcessCli.run(new GatewayMain(), ERROR_PREFIX, args);
    }

    /** A tunnel connection to a serving gateway with {@code token}, asserted to be accepted. */
    static TunnelConnection connect(TunnelClient client, URI url, String token) throws InterruptedException {
        Future<TunnelConnection> connected = client.connect(url, token, null, Duration.ofSeconds(10));
        assertTrue(connected.await(15, TimeUnit.SECONDS));
        assertTrue(connected.isSuccess(), () -> "connect failed: " + connected.cause());
        return connected.getNow();
    }

    /** Opens a stream to {@code target} with {@code grant}, sees the gateway dial it, and closes the stream. */
    static void openAndSeeDialed(TunnelConnection connection, Authority authority, String grant, ServerSocket target)
            throws Exception {
        Future<Http2StreamChannel> opened = connection.openStream(authority, grant, Duration.ofSeconds(10));
        assertTrue(opened.await(15, TimeUnit.SECONDS));
        assertTrue(opened.isSuccess(), () -> "stream refused: " + opened.cause());
        try (Socket accepted = target.accept()) {
            assertTrue(accepted.isConnected(), "the gateway dialed the granted target");
        }
        opened.getNow().close().syncUninterruptibly();
    }

    /** {@code serve} running on a background thread; {@link #close()} stops it and returns its exit code. */
    static final class RunningServe extends InProcessCli.Running<ServeCommand> {
        private RunningServe(String... args) {
            super(new GatewayMain(), "serve", "test-serve", ERROR_PREFIX, args);
        }

        /** Starts serve and waits until it is ready or has failed. */
        static RunningServe start(String... args) throws InterruptedException {
            return started(new RunningServe(args));
        }

        @Override
        protected boolean awaitStarted(ServeCommand command, long timeout, TimeUnit unit) throws InterruptedException {
            return command.awaitStarted(timeout, unit);
        }

        @Override
        protected void stop(ServeCommand command) {
            command.stop();
        }
    }
}
