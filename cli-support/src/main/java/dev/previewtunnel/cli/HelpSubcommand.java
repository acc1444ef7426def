package dev.previewtunnel.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Help;
import picocli.CommandLine.IHelpCommandInitializable2;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;

import java.io.PrintWriter;

/**
 * The {@code help} subcommand of both programs: {@code help} prints the program's help, {@code help session close}
 * the help of that nested command, exactly as {@code session close --help} does (picocli's own HelpCommand stops at
 * the first level). An unknown name is a usage error (exit 1) like any other.
 */
@Command(name = "help", helpCommand = true,
        description = "Print the help of the program, or of a command: help COMMAND [SUBCOMMAND].")
public final class HelpSubcommand implements IHelpCommandInitializable2, Runnable {
    @Parameters(paramLabel = "COMMAND", arity = "0..*", description = "The command, and subcommand, to describe.")
    String[] names = {};

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help message and exit.")
    boolean help;

    private CommandLine self;
    private Help.ColorScheme colors;
    private PrintWriter out;

    @Override
    public void init(CommandLine helpCommandLine, Help.ColorScheme colorScheme, PrintWriter outWriter,
                     PrintWriter errWriter) {
        this.self = helpCommandLine;
        this.colors = colorScheme;
        this.out = outWriter;
    }

    @Override
    public void run() {
        CommandLine target = self.getParent();
        for (String name : names) {
            CommandLine sub = target.getSubcommands().get(name);
            if (sub == null) {
                throw new ParameterException(self, "Unknown command '" + Cli.shown(name) + "' in '"
                        + target.getCommandSpec().qualifiedName() + "'; the commands are: "
                        + String.join(", ", target.getSubcommands().keySet()));
            }
            target = sub;
        }
        target.usage(out, colors);
        out.flush();
    }

    /**
     * Gives the top-level {@code spec}'s {@code help} subcommand (if any) this footer heading and examples; for the
     * programs' model transformer, which picocli runs once the subcommands exist.
     */
    public static CommandSpec describe(CommandSpec spec, String footerHeading, String... examples) {
        CommandLine help = spec.parent() == null ? spec.subcommands().get("help") : null;
        if (help != null) {
            help.getCommandSpec().usageMessage().footerHeading(footerHeading).footer(examples);
        }
        return spec;
    }
}
