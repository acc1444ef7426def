package dev.previewtunnel.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.json.JsonTrees;
import dev.previewtunnel.local.http.LocalHttpServer;
import dev.previewtunnel.local.http.MetricsServer;
import dev.previewtunnel.local.net.ListenAddress;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/** Helpers for commands: the one stdout line, argument checks, listen addresses. */
public final class Cli {

    private Cli() {
    }

    public static ObjectNode json() {
        return JsonTrees.object();
    }

    /**
     * The one stdout line of a command (a JSON event, or the grant/token of an issue command). Deliberately
     * not logging: scripts read stdout and logs go to stderr.
     */
    public static void printLine(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void printJson(ObjectNode node) {
        printLine(JsonTrees.write(node));
    }

    /**
     * A usage error (exit 1) of the command {@code spec}; without a spec (direct calls, tests), an
     * IllegalArgumentException, which maps to exit 1 too.
     */
    public static RuntimeException usage(CommandSpec spec, String message) {
        if (spec == null || spec.commandLine() == null) {
            return new IllegalArgumentException(message);
        }
        return new ParameterException(spec.commandLine(), message);
    }

    public static String requireNonBlank(CommandSpec spec, String value, String option) {
        if (value == null || value.isBlank()) {
            throw usage(spec, option + " must not be blank");
        }
        for (int i = 0; i < value.length(); i++) {
            if (Character.isISOControl(value.charAt(i))) {
                throw usage(spec, option + " must not contain control characters");
            }
        }
        return value;
    }

    public static Duration requireRange(CommandSpec spec, Duration value, String option, Duration min, Duration max) {
        if (value.compareTo(min) < 0) {
            throw usage(spec, option + " must be at least " + human(min) + ", got " + human(value));
        }
        if (value.compareTo(max) > 0) {
            throw usage(spec, option + " must be at most " + human(max) + ", got " + human(value));
        }
        return value;
    }

    /** 600s -> "10m", 86400s -> "24h", 90s -> "90s". */
    public static String human(Duration d) {
        long s = d.toSeconds();
        if (s > 0 && s % 3600 == 0) {
            return s / 3600 + "h";
        }
        if (s > 0 && s % 60 == 0) {
            return s / 60 + "m";
        }
        return s > 0 ? s + "s" : d.toMillis() + "ms";
    }

    /** A user-supplied value echoed in an error message: one line, at most 64 chars. Never use it on a secret. */
    public static String shown(String value) {
        if (value == null) {
            return "";
        }
        String s = ErrorHandling.oneLine(value);
        return s.length() > 64 ? s.substring(0, 64) + "..." : s;
    }

    /**
     * Parses and resolves a listen address given to {@code option} (see {@link ListenAddress}): a malformed value
     * is a usage error (exit 1) whose message shows {@code 127.0.0.1:P or [::1]:P} with P = {@code examplePort};
     * a name that does not resolve is exit 2.
     */
    public static InetSocketAddress parseListen(CommandSpec spec, String option, String text, int examplePort) {
        ListenAddress parsed;
        try {
            parsed = ListenAddress.parse(text);
        } catch (IllegalArgumentException e) {
            throw usage(spec, option + " must be HOST:PORT (e.g. 127.0.0.1:" + examplePort + " or [::1]:"
                    + examplePort + "), got '" + shown(text) + "': " + e.getMessage());
        }
        try {
            return parsed.resolve();
        } catch (UnknownHostException e) {
            throw new CliException(ExitCodes.UNREACHABLE, "cannot resolve " + option + " host '"
                    + shown(parsed.host()) + "'");
        }
    }

    /** {@code 127.0.0.1:7443} or {@code [::1]:7443}; see {@link ListenAddress#format}. */
    public static String hostPort(InetSocketAddress address) {
        return ListenAddress.format(address);
    }

    /**
     * Starts the metrics endpoint of a command's {@code --metrics-listen}: a failure to bind is an exit-2 error
     * naming the address and the option.
     */
    public static MetricsServer startMetrics(InetSocketAddress listen, PrometheusMeterRegistry registry,
                                             LocalHttpServer.Limits limits) {
        try {
            return MetricsServer.start(listen, registry, limits);
        } catch (IOException e) {
            throw new CliException(ExitCodes.UNREACHABLE, "cannot listen on " + hostPort(listen)
                    + " (--metrics-listen): "
                    + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
        }
    }

    /**
     * A file named by {@code option} must exist and be readable, else it is refused (exit 3, as ExitCodes.REFUSED
     * and docs/operations.md define it; it was a usage error before issue 20, which no doc said).
     */
    public static void requireReadableFile(CommandSpec spec, Path file, String option) {
        if (!Files.isRegularFile(file)) {
            throw new CliException(ExitCodes.REFUSED, option + " file " + file + " does not exist or is not a file");
        }
        if (!Files.isReadable(file)) {
            throw new CliException(ExitCodes.REFUSED, option + " file " + file
                    + " is not readable (permission denied)");
        }
    }
}
