package dev.previewtunnel.cli;

import picocli.CommandLine.IModelTransformer;
import picocli.CommandLine.Model.CommandSpec;

/**
 * Lets an option's value start with '-' on commands that name a random id ({@code --id}, {@code --grant}): ids are
 * base64url, so one in 64 starts with '-', and one in about 2048 with "-h" or "-V", which picocli would take for the
 * help or version option and answer "Expected parameter for option '--id'". On these commands a forgotten value
 * then swallows the next option (and the leftover word is reported as unmatched), which is the lesser evil.
 */
public final class OptionValuesMayStartWithDash implements IModelTransformer {
    @Override
    public CommandSpec transform(CommandSpec spec) {
        spec.parser().allowOptionsAsOptionParameters(true);
        return spec;
    }
}
