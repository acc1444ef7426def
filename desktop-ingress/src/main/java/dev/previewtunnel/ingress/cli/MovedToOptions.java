package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.Cli;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;

import java.util.ArrayList;
import java.util.List;

/**
 * Catches the positional form a command had before objects were named by options ({@code session close ID}, now
 * {@code session close --id ID}; docs/operations.md "Command syntax"): a one-line usage error that shows the new
 * form, never a silent alias, so scripts learn the one syntax. A picocli mixin; the parameter is hidden from help.
 */
final class MovedToOptions {
    @Parameters(arity = "0..*", hidden = true, paramLabel = "OLD_FORM")
    List<String> positional = new ArrayList<>();

    /**
     * Refuses positional arguments, naming {@code newForm} (a format string with one %s for the first one, the id
     * of the old form); otherwise requires {@code value}, the option that replaced it.
     */
    String require(CommandSpec spec, String value, String option, String newForm) {
        if (!positional.isEmpty()) {
            String id = Cli.shown(positional.get(0));
            throw Cli.usage(spec, "'" + spec.qualifiedName() + "' names its object with " + option
                    + ", not as an argument; use: " + String.format(newForm, id));
        }
        if (value == null) {
            throw Cli.usage(spec, "Missing required option: '" + option + "'");
        }
        return value;
    }
}
