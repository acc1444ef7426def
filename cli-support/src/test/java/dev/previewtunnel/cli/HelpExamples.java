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
 * As in a shell, a line ending in " \\" continues on the next and text after " # " is a comment. No line is wider
 * than the help (80 columns): picocli would wrap it, and a wrapped example no longer pastes. Used by both programs'
 * ExamplesTest.
 */
public final class HelpExamples {
    /** picocli's default usage width, which both programs keep. */
    private static final int WIDTH = 80;

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
        List<String> joined = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String line : examples) {
            if (line.length() > WIDTH) {
                problems.add(qualified + ": example line wider than " + WIDTH + " columns: '" + line + "'");
            }
            current.append(current.length() == 0 ? line : " " + line.strip());
            if (line.endsWith(" \\")) {
                current.setLength(current.length() - 1);
            } else {
                joined.add(current.toString());
                current.setLength(0);
            }
        }
        if (current.length() > 0) {
            problems.add(qualified + ": the last example line ends with a continuation: '" + current + "'");
        }
        for (String example : joined) {
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
