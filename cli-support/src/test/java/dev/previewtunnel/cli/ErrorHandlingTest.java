package dev.previewtunnel.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.IModelTransformer;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.BindException;
import java.net.UnknownHostException;
import java.nio.file.AccessDeniedException;
import java.util.Set;
import java.util.concurrent.Callable;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ErrorHandlingTest {
    private static final String JWT = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLWJ5dGVz";

    /** A two-level command like the real CLIs; {@code fail} throws whatever {@code --throw} names. */
    @Command(name = "demo", mixinStandardHelpOptions = true, modelTransformer = Demo.Install.class,
            subcommands = Demo.Fail.class)
    static final class Demo {
        static final class Install implements IModelTransformer {
            @Override
            public CommandSpec transform(CommandSpec spec) {
                return new ErrorHandling("demo", Set.of("--token")).installOn(spec);
            }
        }

        @Command(name = "fail", mixinStandardHelpOptions = true)
        static final class Fail implements Callable<Integer> {
            @Option(names = "--token")
            String token;

            @Option(names = "--throw")
            String what = "none";

            @Override
            public Integer call() throws Exception {
                switch (what) {
                    case "cli" -> throw new CliException(ExitCodes.REFUSED, "refused\nwith two lines");
                    case "bind" -> throw new BindException("Address already in use");
                    case "bug" -> throw new IllegalStateException("bug");
                    case "echo" -> throw new IllegalArgumentException("bad token " + token);
                    default -> {
                        return ExitCodes.OK;
                    }
                }
            }
        }
    }

    @Command(name = "plain", modelTransformer = Plain.Install.class)
    static final class Plain implements Callable<Integer> {
        static final class Install implements IModelTransformer {
            @Override
            public CommandSpec transform(CommandSpec spec) {
                return new ErrorHandling("plain").installOn(spec);
            }
        }

        @Override
        public Integer call() {
            throw new IllegalArgumentException("value " + JWT + " is wrong");
        }
    }

    private record Run(int code, String out, String err) {
    }

    private static Run run(Object command, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = new CommandLine(command);
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        int code = cl.execute(args);
        return new Run(code, out.toString(), err.toString());
    }

    @Test
    void exceptionsMapToTheDocumentedExitCodes() {
        assertEquals(1, ErrorHandling.exitCodeFor(new IllegalArgumentException("x")));
        assertEquals(1, ErrorHandling.exitCodeFor(new NumberFormatException("x")));
        assertEquals(2, ErrorHandling.exitCodeFor(new BindException("in use")));
        assertEquals(2, ErrorHandling.exitCodeFor(new UnknownHostException("nowhere")));
        assertEquals(3, ErrorHandling.exitCodeFor(new AccessDeniedException("/k")));
        assertEquals(3, ErrorHandling.exitCodeFor(new CliException(ExitCodes.REFUSED, "no")));
        assertEquals(4, ErrorHandling.exitCodeFor(new IOException("disk")));
        assertEquals(4, ErrorHandling.exitCodeFor(new IllegalStateException("bug")));
    }

    @Test
    void errorMessagesAreFlattenedToOneLine() {
        assertEquals("a b c", ErrorHandling.oneLine("a\nb\r\n\tc\n"));
        String longText = "x".repeat(5000);
        assertTrue(ErrorHandling.oneLine(longText).length() < 500);
        assertTrue(ErrorHandling.oneLine(longText).endsWith("..."));
        assertEquals("", ErrorHandling.oneLine(null));
    }

    @Test
    void usageErrorsAreOneLineWithTheProgramPrefixAndAHelpHint() {
        Run r = run(new Demo(), "fail", "--bogus");
        assertEquals(ExitCodes.USAGE, r.code());
        assertEquals("", r.out());
        assertEquals(1, r.err().lines().count(), r.err());
        assertTrue(r.err().startsWith("demo: Unknown option: '--bogus'"), r.err());
        assertTrue(r.err().strip().endsWith("(see 'demo fail --help')"), r.err());

        Run suggestion = run(new Demo(), "fail", "--thro", "bug");
        assertTrue(suggestion.err().contains("did you mean --throw?"), suggestion.err());
    }

    @Test
    void executionFailuresKeepTheirExitCodeAndBecomeOneLine() {
        Run refused = run(new Demo(), "fail", "--throw", "cli");
        assertEquals(ExitCodes.REFUSED, refused.code());
        assertEquals("demo: refused with two lines" + System.lineSeparator(), refused.err());

        Run bind = run(new Demo(), "fail", "--throw", "bind");
        assertEquals(ExitCodes.UNREACHABLE, bind.code());
        assertEquals("demo: Address already in use", bind.err().strip());

        Run bug = run(new Demo(), "fail", "--throw", "bug");
        assertEquals(ExitCodes.INTERNAL, bug.code());
        assertEquals("demo: internal error (java.lang.IllegalStateException): bug", bug.err().strip());
        assertFalse(bug.err().contains("\tat "), "no stack trace");
    }

    @Test
    void valuesOfSecretOptionsAndJwtsAreRedacted() {
        // picocli quotes a stray argument in full; a grant pasted without its option must not be echoed.
        Run stray = run(new Demo(), "fail", JWT);
        assertEquals(ExitCodes.USAGE, stray.code());
        assertFalse(stray.err().contains(JWT), stray.err());
        assertFalse(stray.err().contains("eyJzdWIiOiJ4In0"), stray.err());
        assertTrue(stray.err().contains(ErrorHandling.REDACTED), stray.err());

        Run unknown = run(new Demo(), "fail", "--token", "s3cret-token-value", "s3cret-token-value");
        assertFalse(unknown.err().contains("s3cret-token-value"), unknown.err());

        Run equals = run(new Demo(), "fail", "--token=tok-abc", "--throw", "echo");
        assertEquals(ExitCodes.USAGE, equals.code());
        assertEquals("demo: bad token <redacted> (see 'demo fail --help')", equals.err().strip());
    }

    @Test
    void withoutSecretOptionsMessagesAreLeftAlone() {
        Run r = run(new Plain());
        assertEquals(ExitCodes.USAGE, r.code());
        assertTrue(r.err().contains(JWT), "no redaction configured: output as before");
        assertEquals("plain: ", new ErrorHandling("plain").prefix());
    }

    @Test
    void installOnLeavesSubcommandSpecsAlone() {
        CommandLine cl = new CommandLine(new Demo());
        assertTrue(cl.getParameterExceptionHandler() instanceof ErrorHandling);
        assertTrue(cl.getExecutionExceptionHandler() instanceof ErrorHandling);
        assertTrue(cl.getSubcommands().get("fail").getExecutionExceptionHandler() instanceof ErrorHandling,
                "propagated to subcommands");
    }
}
