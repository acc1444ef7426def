package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.SettingsProvider;

/**
 * The default values of {@code run}'s options: {@code PTUN_INGRESS_*} variables, else the config file. Tokens and
 * grants given on the command line are never settings: only the files holding them are.
 */
final class IngressSettingsProvider extends SettingsProvider {
    /** The options of {@code run} that are not settings. */
    static final String[] NOT_SETTINGS = {"token", "grant"};

    IngressSettingsProvider() {
        super(IngressCli.ENV_PREFIX, NOT_SETTINGS);
    }
}
