package dev.previewtunnel.cli;

import picocli.CommandLine;
import picocli.CommandLine.ParseResult;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;

/**
 * Checks the examples that end every command's help (the footer lines, after "Examples:"): each command and
 * subcommand has at least one, each starts with the program's name, and picocli parses it (its words name existing
 * subcommands and options, its values convert, required options are there) into that command or one below it.
 * Text after " # " is a comment. Used by both programs' ExamplesTest.
 */
public final class HelpExamples {
    private HelpExamples() {
    }

    /** What is wrong with the examples of {@code program}'s commands; empty when nothing. */
    public static List<String> problems(Supplier<CommandLine> program) {
        List<String> problems = new ArrayList<>();
        CommandLine root = program.get();
        check(root, program, root.getCommandName(), problems);
        return problems;
    }

    /** Every command of {@code root}'s tree, by qualified name ({@code desktop-ingress session close}). */
    public static List<String> commands(CommandLine root) {
        List<String> out = new ArrayList<>();
        collect(root, out);
        return out;
    }

    private static void collect(CommandLine cmd, List<String> out) {
        out.add(cmd.getCommandSpec().qualifiedName());
        cmd.getSubcommands().values().stream().distinct().forEach(sub -> collect(sub, out));
    }

    private static void check(CommandLine cmd, Supplier<CommandLine> program, String name, List<String> problems) {
        String qualified = cmd.getCommandSpec().qualifiedName();
        String heading = cmd.getCommandSpec().usageMessage().footerHeading();
        String[] examples = cmd.getCommandSpec().usageMessage().footer();
        if (!heading.endsWith("Examples:%n") || examples.length == 0) {
            problems.add(qualified + ": no examples at the end of its help");
        }
        for (String example : examples) {
            String line = example.contains(" # ") ? example.substring(0, example.indexOf(" # ")) : example;
            List<String> words = new ArrayList<>(Arrays.asList(line.strip().split("\\s+")));
            if (!line.startsWith("  " + name + " ") || words.isEmpty()) {
                problems.add(qualified + ": example '" + example + "' does not start with '  " + name + " '");
                continue;
            }
            words.remove(0);
            try {
                ParseResult parsed = program.get().parseArgs(words.toArray(String[]::new));
                while (parsed.hasSubcommand()) {
                    parsed = parsed.subcommand();
                }
                String reached = parsed.commandSpec().qualifiedName();
                if (!(reached + " ").startsWith(qualified + " ")) {
                    problems.add(qualified + ": example '" + example + "' is of '" + reached + "'");
                }
            } catch (CommandLine.ParameterException e) {
                problems.add(qualified + ": example '" + example + "' does not parse: " + e.getMessage());
            }
        }
        cmd.getSubcommands().values().stream().distinct().forEach(sub -> check(sub, program, name, problems));
    }
}
