package dev.previewtunnel.gateway.cli;

import picocli.CommandLine;
import picocli.CommandLine.IExecutionExceptionHandler;
import picocli.CommandLine.IExitCodeExceptionMapper;
import picocli.CommandLine.IParameterExceptionHandler;
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
import java.util.List;

/**
 * Turns every failure into one line on stderr ({@code env-gateway: <reason>}) and an exit code from
 * {@link ExitCodes}. Never prints a stack trace: messages here are built from exception messages that, in this
 * code base, never quote key material, grants or tokens, and they are flattened to one line and truncated.
 */
final class ErrorHandling implements IParameterExceptionHandler, IExecutionExceptionHandler, IExitCodeExceptionMapper {
    static final String PREFIX = "env-gateway: ";
    private static final int MAX_MESSAGE = 400;

    @Override
    public int getExitCode(Throwable t) {
        return exitCodeFor(t);
    }

    static int exitCodeFor(Throwable t) {
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
        report(cmd, oneLine(message) + hint(cmd));
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
        report(cmd, oneLine(message) + (code == ExitCodes.USAGE ? hint(cmd) : ""));
        return code;
    }

    private static void report(CommandLine cmd, String line) {
        PrintWriter err = cmd.getErr();
        err.println(PREFIX + line);
        err.flush();
    }

    private static String hint(CommandLine cmd) {
        return " (see '" + cmd.getCommandSpec().qualifiedName() + " --help')";
    }

    /** Control characters (line breaks included) become spaces; long messages are cut. */
    static String oneLine(String text) {
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
