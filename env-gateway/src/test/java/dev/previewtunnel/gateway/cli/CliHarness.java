package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.InProcessCli;
import dev.previewtunnel.cli.InProcessCli.Result;

import java.util.concurrent.TimeUnit;

/** Runs the env-gateway CLI in-process through the shared {@link InProcessCli} harness. */
final class CliHarness {
    static final String ERROR_PREFIX = "env-gateway: ";

    private CliHarness() {
    }

    static Result run(String... args) {
        return InProcessCli.run(new GatewayMain(), ERROR_PREFIX, args);
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
