package dev.previewtunnel.cli;

import dev.previewtunnel.local.files.OwnerOnlyFiles;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * The {@code -o, --output FILE} of {@code token issue} and {@code grant issue}: the secret goes to an owner-only
 * file instead of stdout. The content is written to a temporary file created rw------- in FILE's directory and then
 * renamed over FILE, so no byte is ever readable by others and a reader sees the old file or the new one. An
 * existing FILE that group/others may access, or that is not a plain file, is refused (exit 3): replacing it would
 * hide that someone else could have read the previous secret, and a symbolic link could point anywhere.
 */
public final class SecretOutputFile {
    private SecretOutputFile() {
    }

    /** Writes {@code secret} and a line break to {@code file} as above; {@code option} names it in messages. */
    public static void write(Path file, String option, String secret) {
        Path absolute = file.toAbsolutePath();
        Path dir = absolute.getParent();
        if (dir == null || !Files.isDirectory(dir)) {
            throw new CliException(ExitCodes.USAGE, option + " " + file + ": directory " + dir + " does not exist");
        }
        requireReplaceable(file, option);
        try {
            OwnerOnlyFiles.writeDurably(absolute, (secret + "\n").getBytes(StandardCharsets.UTF_8));
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot write " + option + " " + file
                    + " (permission denied in " + dir + ")");
        } catch (IOException e) {
            // The class only: a message could name the temporary file, never the content, but say little.
            throw new CliException(ExitCodes.REFUSED, "cannot write " + option + " " + file + " ("
                    + e.getClass().getSimpleName() + ")");
        }
    }

    private static void requireReplaceable(Path file, String option) {
        BasicFileAttributes attributes;
        try {
            attributes = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            return; // does not exist (or cannot be seen): it is created
        }
        if (!attributes.isRegularFile()) {
            throw new CliException(ExitCodes.REFUSED, option + " " + file + " exists and is not a regular file "
                    + "(a symbolic link, directory or device); remove it or choose another file");
        }
        try {
            TrustedPaths.requireOwnerOnlyFile(file, option);
        } catch (TrustedPaths.UntrustedException e) {
            throw new CliException(ExitCodes.REFUSED, e.getMessage() + " (or remove it), then issue again");
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot check " + option + " " + file + " ("
                    + e.getClass().getSimpleName() + ")");
        }
    }
}
