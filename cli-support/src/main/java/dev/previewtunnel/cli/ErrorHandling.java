package dev.previewtunnel.cli;

import picocli.CommandLine;
import picocli.CommandLine.IExecutionExceptionHandler;
import picocli.CommandLine.IExitCodeExceptionMapper;
import picocli.CommandLine.IParameterExceptionHandler;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.UnmatchedArgumentException;

import java.io.PrintWriter;
import java.net.BindException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.UnknownHostException;
import java.nio.file.AccessDeniedException;
import java.time.DateTimeException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Turns every failure into one line on stderr ({@code <program>: <reason>}) and an exit code from
 * {@link ExitCodes}. Never prints a stack trace: messages are built from exception messages that, in this code
 * base, never quote key material, grants or tokens, and they are flattened to one line and truncated.
 *
 * <p>A program whose options take secrets names them ({@code secretOptions}): picocli's own messages quote
 * arguments ("Unmatched argument at index 3: '...'"), so the values given to those options, and anything shaped
 * like a JWT, are replaced by {@value #REDACTED} before printing.
 */
public final class ErrorHandling implements IParameterExceptionHandler, IExecutionExceptionHandler,
        IExitCodeExceptionMapper {
    /** What a secret is replaced with in an error line. */
    public static final String REDACTED = "<redacted>";
    private static final int MAX_MESSAGE = 400;
    /** Shortest secret value redacted by exact match (shorter ones would garble the message, and are no secret). */
    private static final int MIN_SECRET = 3;
    /** A compact JWS/JWT: its header always encodes to "eyJ" ('{"'). */
    private static final Pattern JWT = Pattern.compile("eyJ[A-Za-z0-9_-]*(?:\\.[A-Za-z0-9_-]*){1,2}");

    private final String prefix;
    private final Set<String> secretOptions;

    /** Error lines start with {@code programName + ": "}. */
    public ErrorHandling(String programName) {
        this(programName, Set.of());
    }

    /**
     * @param secretOptions option names (e.g. {@code --token}) whose values must never appear in an error line;
     *                      when non-empty, JWT-shaped text is redacted too
     */
    public ErrorHandling(String programName, Set<String> secretOptions) {
        this.prefix = programName + ": ";
        this.secretOptions = Set.copyOf(secretOptions);
    }

    /** {@code "<program>: "}. */
    public String prefix() {
        return prefix;
    }

    /**
     * Installs this handling on the top-level command line being built; for use in a picocli model transformer
     * (picocli runs those once the {@link CommandLine} and its subcommands exist; the handlers propagate to the
     * subcommands). Subcommand specs are returned unchanged.
     */
    public CommandSpec installOn(CommandSpec spec) {
        CommandLine commandLine = spec.commandLine();
        if (commandLine != null && spec.parent() == null) {
            commandLine.setParameterExceptionHandler(this);
            commandLine.setExecutionExceptionHandler(this);
            commandLine.setExitCodeExceptionMapper(this);
        }
        return spec;
    }

    @Override
    public int getExitCode(Throwable t) {
        return exitCodeFor(t);
    }

    public static int exitCodeFor(Throwable t) {
        if (t instanceof CliException c) {
            return c.exitCode();
        }
        if (t instanceof ParameterException || t instanceof CommandLine.TypeConversionException
                || t instanceof IllegalArgumentException || t instanceof DateTimeException) {
            return ExitCodes.USAGE;
        }
        if (t instanceof AccessDeniedException) {
            return ExitCodes.REFUSED;
        }
        if (t instanceof BindException || t instanceof UnknownHostException || t instanceof ConnectException
                || t instanceof NoRouteToHostException) {
            return ExitCodes.UNREACHABLE;
        }
        return ExitCodes.INTERNAL;
    }

    @Override
    public int handleParseException(ParameterException ex, String[] args) {
        CommandLine cmd = ex.getCommandLine();
        String message = ex.getMessage();
        if (ex instanceof UnmatchedArgumentException u) {
            List<String> suggestions = u.getSuggestions();
            if (!suggestions.isEmpty()) {
                message += "; did you mean " + String.join(" or ", suggestions) + "?";
            }
        }
        report(cmd, oneLine(redact(message, args == null ? List.of() : List.of(args))) + hint(cmd));
        return exitCodeFor(ex);
    }

    @Override
    public int handleExecutionException(Exception ex, CommandLine cmd, ParseResult parsed) {
        int code = exitCodeFor(ex);
        String message;
        if (ex instanceof CliException || code != ExitCodes.INTERNAL) {
            message = ex.getMessage() == null ? ex.getClass().getSimpleName() : ex.getMessage();
        } else {
            message = "internal error (" + ex.getClass().getName() + ")"
                    + (ex.getMessage() == null ? "" : ": " + ex.getMessage());
        }
        List<String> args = parsed == null ? List.of() : parsed.originalArgs();
        report(cmd, oneLine(redact(message, args)) + (code == ExitCodes.USAGE ? hint(cmd) : ""));
        return code;
    }

    private void report(CommandLine cmd, String line) {
        PrintWriter err = cmd.getErr();
        err.println(prefix + line);
        err.flush();
    }

    private static String hint(CommandLine cmd) {
        return " (see '" + cmd.getCommandSpec().qualifiedName() + " --help')";
    }

    /**
     * Replaces the values given to the secret options in {@code args} ({@code --opt VALUE} and
     * {@code --opt=VALUE}) and anything JWT-shaped. A no-op when this handling has no secret options.
     */
    String redact(String message, List<String> args) {
        if (message == null || secretOptions.isEmpty()) {
            return message;
        }
        List<String> secrets = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            String arg = args.get(i);
            if (arg == null) {
                continue;
            }
            if (secretOptions.contains(arg) && i + 1 < args.size() && args.get(i + 1) != null) {
                secrets.add(args.get(i + 1));
            }
            int eq = arg.indexOf('=');
            if (eq > 0 && secretOptions.contains(arg.substring(0, eq))) {
                secrets.add(arg.substring(eq + 1));
            }
        }
        secrets.sort(Comparator.comparingInt(String::length).reversed()); // a secret containing another first
        String s = message;
        for (String secret : secrets) {
            if (secret.length() >= MIN_SECRET) {
                s = s.replace(secret, REDACTED);
            }
        }
        return JWT.matcher(s).replaceAll(REDACTED);
    }

    /** Control characters (line breaks included) become spaces; long messages are cut. */
    public static String oneLine(String text) {
        if (text == null) {
            return "";
        }
        StringBuilder sb = new StringBuilder(Math.min(text.length(), MAX_MESSAGE + 3));
        boolean lastSpace = false;
        for (int i = 0; i < text.length() && sb.length() < MAX_MESSAGE; i++) {
            char c = text.charAt(i);
            boolean space = Character.isWhitespace(c) || Character.isISOControl(c);
            if (space) {
                if (!lastSpace && sb.length() > 0) {
                    sb.append(' ');
                }
            } else {
                sb.append(c);
            }
            lastSpace = space;
        }
        String s = sb.toString().strip();
        return text.length() > MAX_MESSAGE && s.length() >= MAX_MESSAGE ? s + "..." : s;
    }
}
