package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.InProcessCli;
import dev.previewtunnel.cli.InProcessCli.Result;

import java.util.concurrent.TimeUnit;

/** Runs the desktop-ingress CLI in-process through the shared {@link InProcessCli} harness. */
final class IngressCliHarness {
    static final String ERROR_PREFIX = "desktop-ingress: ";

    private IngressCliHarness() {
    }

    static Result run(String... args) {
        return InProcessCli.run(new IngressMain(), ERROR_PREFIX, args);
    }

    /** A result captured by hand (with {@link InProcessCli.Captured}). */
    static Result result(int exitCode, String out, String err) {
        return new Result(exitCode, out, err, ERROR_PREFIX);
    }

    /** {@code run} on a background thread; {@link #close()} stops it and returns its exit code. */
    static final class RunningIngress extends InProcessCli.Running<RunCommand> {
        private RunningIngress(String... args) {
            super(new IngressMain(), "run", "test-ingress-run", ERROR_PREFIX, args);
        }

        /** Starts {@code run} and waits until it is ready or has failed. */
        static RunningIngress start(String... args) throws InterruptedException {
            return started(new RunningIngress(args));
        }

        @Override
        protected boolean awaitStarted(RunCommand command, long timeout, TimeUnit unit) throws InterruptedException {
            return command.awaitStarted(timeout, unit);
        }

        @Override
        protected void stop(RunCommand command) {
            command.stop();
        }
    }
}
