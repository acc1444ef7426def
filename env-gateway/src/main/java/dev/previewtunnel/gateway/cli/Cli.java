package dev.previewtunnel.gateway.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.grants.KeyDirectory;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;

/** Helpers shared by the commands: stdout output, argument checks, key directory access. */
final class Cli {
    private static final ObjectMapper JSON = new ObjectMapper();

    private Cli() {
    }

    static ObjectNode json() {
        return JSON.createObjectNode();
    }

    /**
     * The one stdout line of a command (a JSON event, or the grant/token of an issue command). Deliberately
     * not logging: scripts read stdout and logs go to stderr.
     */
    static void printLine(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static void printJson(ObjectNode node) {
        try {
            printLine(JSON.writeValueAsString(node));
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }

    static ParameterException usage(CommandSpec spec, String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    static String requireNonBlank(CommandSpec spec, String value, String option) {
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

    static Duration requireRange(CommandSpec spec, Duration value, String option, Duration min, Duration max) {
        if (value.compareTo(min) < 0) {
            throw usage(spec, option + " must be at least " + human(min) + ", got " + human(value));
        }
        if (value.compareTo(max) > 0) {
            throw usage(spec, option + " must be at most " + human(max) + ", got " + human(value));
        }
        return value;
    }

    /** 600s -> "10m", 86400s -> "24h", 90s -> "90s". */
    static String human(Duration d) {
        long s = d.toSeconds();
        if (s > 0 && s % 3600 == 0) {
            return s / 3600 + "h";
        }
        if (s > 0 && s % 60 == 0) {
            return s / 60 + "m";
        }
        return s > 0 ? s + "s" : d.toMillis() + "ms";
    }

    /** A user-supplied value echoed in an error message: one line, at most 64 chars. */
    static String shown(String value) {
        if (value == null) {
            return "";
        }
        String s = ErrorHandling.oneLine(value);
        return s.length() > 64 ? s.substring(0, 64) + "..." : s;
    }

    /**
     * Opens a key directory; every problem with it (missing, unreadable, group/other-readable signing key,
     * invalid content) is a refusal, exit code 3. Messages come from the grants module, which never quotes
     * key material.
     */
    static KeyDirectory openKeys(Path dir) {
        try {
            return KeyDirectory.open(dir);
        } catch (NoSuchFileException e) {
            throw new CliException(ExitCodes.REFUSED, "no keys in " + dir + " (" + e.getFile()
                    + " does not exist); create them with: env-gateway keys init --dir " + dir);
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, "permission denied reading " + e.getFile());
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot read key directory " + dir + ": "
                    + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : " " + e.getMessage()));
        } catch (IllegalStateException e) {
            throw new CliException(ExitCodes.REFUSED, e.getMessage());
        }
    }
}
