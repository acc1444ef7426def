package dev.previewtunnel.spikes.docs;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The fenced shell blocks of a Markdown doc, split into the commands a reader would type. The convention the docs
 * follow (stated in docs/running.md):
 * <ul>
 * <li>{@code ```bash}, {@code ```sh}, {@code ```shell}: every line is a command (a trailing {@code \} continues it,
 * a here-document runs to its terminator), nothing of its output is shown;</li>
 * <li>{@code ```console}: {@code $ } starts a command, the lines below it up to the next {@code $ } are its
 * output;</li>
 * <li>a command exits 0 unless a comment at its end says {@code # exit N}; a trailing {@code &} runs it in the
 * background.</li>
 * </ul>
 */
final class ShellBlocks {
    static final Set<String> LANGUAGES = Set.of("bash", "sh", "shell", "console");
    private static final Pattern FENCE = Pattern.compile("^```([a-z]*)\\s*$");
    private static final Pattern EXIT = Pattern.compile("#\\s*exit (\\d+)\\b");
    private static final Pattern HEREDOC = Pattern.compile("<<-?\\s*'?\"?([A-Za-z_]+)'?\"?");

    /** One command: where it starts in the doc, its text (continuations joined by newlines), what the doc says. */
    record Command(int line, String text, boolean background, int expectedExit, List<String> output) {
        /** The first line, for messages. */
        String shown() {
            String first = text.lines().findFirst().orElse("");
            return first.length() > 140 ? first.substring(0, 140) + "..." : first;
        }
    }

    /** A fenced block: its language, the line of its opening fence, its commands. */
    record Block(String language, int line, List<Command> commands) {
    }

    private ShellBlocks() {
    }

    static List<Block> parse(String markdown) {
        List<String> lines = markdown.lines().toList();
        List<Block> blocks = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            Matcher open = FENCE.matcher(lines.get(i));
            if (!open.matches()) {
                continue;
            }
            int end = i + 1;
            while (end < lines.size() && !lines.get(end).startsWith("```")) {
                end++;
            }
            String language = open.group(1);
            if (LANGUAGES.contains(language)) {
                List<String> body = lines.subList(i + 1, Math.min(end, lines.size()));
                blocks.add(new Block(language, i + 1,
                        language.equals("console") ? console(body, i + 2) : script(body, i + 2)));
            }
            i = end;
        }
        return blocks;
    }

    /**
     * The output a doc shows for a command of a {@code bash} block: the body of the next fenced block when it has no
     * language (README.md shows {@code open}'s one line so, after a sentence); empty when the next block has one or
     * there is none. {@code commandLine} is the command's line, 1-based, as {@link Command#line()}.
     */
    static List<String> shownAfter(String markdown, int commandLine) {
        List<String> lines = markdown.lines().toList();
        int i = commandLine; // 0-based: the line after the command
        while (i < lines.size() && !lines.get(i).startsWith("```")) {
            i++; // to the end of the command's own block
        }
        for (i++; i < lines.size(); i++) {
            if (lines.get(i).startsWith("```")) {
                if (!lines.get(i).strip().equals("```")) {
                    return List.of();
                }
                int end = i + 1;
                while (end < lines.size() && !lines.get(end).startsWith("```")) {
                    end++;
                }
                return lines.subList(i + 1, end);
            }
        }
        return List.of();
    }

    private static List<Command> script(List<String> body, int firstLine) {
        List<Command> commands = new ArrayList<>();
        for (int i = 0; i < body.size(); i++) {
            String line = body.get(i);
            if (line.isBlank() || line.strip().startsWith("#")) {
                continue;
            }
            int start = i;
            StringBuilder text = new StringBuilder(line);
            i = continuation(body, i, text);
            commands.add(command(firstLine + start, text.toString(), List.of()));
        }
        return commands;
    }

    private static List<Command> console(List<String> body, int firstLine) {
        List<Command> commands = new ArrayList<>();
        for (int i = 0; i < body.size(); i++) {
            if (!body.get(i).startsWith("$ ")) {
                continue; // output before any command: none in the docs
            }
            int start = i;
            StringBuilder text = new StringBuilder(body.get(i).substring(2));
            i = continuation(body, i, text);
            List<String> output = new ArrayList<>();
            while (i + 1 < body.size() && !body.get(i + 1).startsWith("$ ")) {
                output.add(body.get(++i));
            }
            commands.add(command(firstLine + start, text.toString(), output));
        }
        return commands;
    }

    /** Appends the lines that continue the command at {@code i} (a trailing backslash, a here-document). */
    private static int continuation(List<String> body, int i, StringBuilder text) {
        while (text.toString().endsWith("\\") && i + 1 < body.size()) {
            text.append('\n').append(body.get(++i));
        }
        Matcher heredoc = HEREDOC.matcher(withoutComment(text.toString()));
        if (heredoc.find()) {
            String terminator = heredoc.group(1);
            while (i + 1 < body.size()) {
                text.append('\n').append(body.get(++i));
                if (body.get(i).strip().equals(terminator)) {
                    break;
                }
            }
        }
        return i;
    }

    private static Command command(int line, String text, List<String> output) {
        String code = withoutComment(text.lines().reduce((a, b) -> b).orElse("")).strip();
        Matcher exit = EXIT.matcher(text.lines().reduce((a, b) -> b).orElse(""));
        boolean background = code.endsWith("&") && !code.endsWith("&&");
        return new Command(line, text, background, exit.find() ? Integer.parseInt(exit.group(1)) : 0, output);
    }

    /** A line without its trailing comment (a # after whitespace, outside quotes). */
    static String withoutComment(String line) {
        boolean single = false;
        boolean dbl = false;
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (c == '\'' && !dbl) {
                single = !single;
            } else if (c == '"' && !single) {
                dbl = !dbl;
            } else if (c == '#' && !single && !dbl && (i == 0 || Character.isWhitespace(line.charAt(i - 1)))) {
                return line.substring(0, i);
            }
        }
        return line;
    }
}
