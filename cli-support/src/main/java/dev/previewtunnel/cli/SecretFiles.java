package dev.previewtunnel.cli;

import picocli.CommandLine.Model.CommandSpec;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Files that hold secrets (tokens, grants): read without ever echoing their content (docs/security.md "Secrets"),
 * refused when others may read them.
 */
public final class SecretFiles {
    /** A token or grant file is a few KiB at most; anything this big is the wrong file. */
    public static final long MAX_SIZE = 1024 * 1024;

    private SecretFiles() {
    }

    /**
     * The non-blank lines of a token or grant file that are not # comments, stripped. A missing or unreadable file
     * is refused (exit 3), and so is one group or others may access: it holds a secret, like the state files
     * (docs/operations.md "Exit codes"; before issue 20 it was only warned about, while doctor failed it).
     */
    public static List<String> readLines(CommandSpec spec, Path file, String option) {
        Cli.requireReadableFile(spec, file, option);
        requireOwnerOnly(file, option);
        String content;
        try {
            if (Files.size(file) > MAX_SIZE) {
                throw Cli.usage(spec, option + " " + file + " is larger than 1 MiB: not a token or grant file");
            }
            content = Files.readString(file, StandardCharsets.UTF_8);
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, option + " file " + file
                    + " is not readable (permission denied)");
        } catch (IOException e) {
            // Never the exception's message: a decoder's could quote the content.
            throw new CliException(ExitCodes.REFUSED, "cannot read " + option + " file " + file + " ("
                    + e.getClass().getSimpleName() + ")");
        }
        List<String> lines = new ArrayList<>();
        content.lines().map(String::strip).filter(l -> !l.isEmpty() && !l.startsWith("#")).forEach(lines::add);
        return lines;
    }

    /** Refuses (naming {@code option} and the file, never the content) a file group or others may access. */
    public static void requireOwnerOnly(Path file, String option) {
        String shared = OwnerOnlyCheck.sharedPermissions(file);
        if (shared != null) {
            throw new CliException(ExitCodes.REFUSED, option + " file " + file + " is accessible by group/others ("
                    + shared + "); it holds secrets: chmod 600 " + file);
        }
    }
}
