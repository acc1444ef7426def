package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.cli.Cli;

/**
 * Names one gateway in check ids and messages: the default one ({@code --gateway}) or an environment's own
 * ({@code --environment-gateway ENV=URL}), whose checks are {@code environment-gateway},
 * {@code environment-token} and {@code environment-clock} and whose messages name the environment.
 *
 * @param environment null for the default gateway
 */
public record GatewayLabel(String environment) {
    public static final GatewayLabel DEFAULT = new GatewayLabel(null);

    String check(String name) {
        return environment == null ? name : "environment-" + name;
    }

    /** "the gateway" or "the gateway of environment 'staging'". */
    String who() {
        return environment == null ? "the gateway" : "the gateway of environment '" + Cli.shown(environment) + "'";
    }

    /** "the gateway's" clock, or that of an environment's gateway. */
    String whose() {
        return environment == null ? "the gateway's" : "the clock of " + who();
    }

    /** Where the token of this gateway is configured. */
    String tokenSetting() {
        return environment == null ? "--token-file FILE or PTUN_INGRESS_TOKEN_FILE"
                : "--environment-token-file " + Cli.shown(environment) + "=FILE";
    }
}
