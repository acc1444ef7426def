package dev.previewtunnel.ingress.cli;

import picocli.CommandLine.IModelTransformer;
import picocli.CommandLine.Model.CommandSpec;

/**
 * Lets a command's positional id start with '-'. Grant ids are 128 random bits in base64url, so one in 64 starts
 * with '-', which picocli would otherwise read as an unknown option ("Missing required parameter GRANT_ID").
 * A mistyped option on such a command is then reported as a bad id (or as an unmatched argument) instead.
 */
public final class IdsMayStartWithDash implements IModelTransformer {
    @Override
    public CommandSpec transform(CommandSpec spec) {
        spec.parser().unmatchedOptionsArePositionalParams(true);
        return spec;
    }
}
