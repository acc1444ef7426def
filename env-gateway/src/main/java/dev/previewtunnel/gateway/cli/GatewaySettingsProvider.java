package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.SettingsProvider;

/** The default values of {@code serve}'s options: {@code PTUN_GATEWAY_*} variables, else the config file. */
final class GatewaySettingsProvider extends SettingsProvider {
    GatewaySettingsProvider() {
        super(GatewayCli.ENV_PREFIX, StdioControlOptions.NOT_A_SETTING);
    }
}
