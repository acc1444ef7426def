package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.cli.Cli;

import java.nio.file.Path;

/**
 * What to do about a connection token a gateway refused, from the reason in its refusal ("connection token refused
 * (grant_...)") and what the token itself claims. Never quotes the token.
 */
final class TokenAdvice {
    private TokenAdvice() {
    }

    static String forRefusal(GatewayLabel g, String message, String token, Path tokenPath) {
        TokenView view = TokenView.peek(token);
        String reason = message == null ? "" : message;
        String where = tokenPath == null ? "the token" : "the token in " + tokenPath;
        String refused = g.who() + " refused " + where;
        if (reason.contains("grant_wrong_environment")) {
            return refused + " (grant_wrong_environment): it is for environment '"
                    + (view == null ? "?" : Cli.shown(view.env())) + "' and the gateway serves another; issue one "
                    + (g.environment() == null
                    ? "with 'env-gateway token issue --env <the gateway's env>' (its ready line names it)"
                    : "with 'env-gateway token issue --env " + Cli.shown(g.environment()) + "' on that gateway's "
                    + "host, or fix --environment-gateway if the URL is another environment's gateway");
        }
        if (reason.contains("grant_expired")) {
            return refused + " (grant_expired)" + (view == null || view.exp() == null ? ""
                    : ": it expired at " + view.exp()) + "; issue a new one with 'env-gateway token issue'";
        }
        if (reason.contains("grant_unknown_key") || reason.contains("grant_bad_signature")) {
            return refused + " (" + (reason.contains("unknown") ? "grant_unknown_key"
                    : "grant_bad_signature") + "): it was signed by a key the gateway does not trust"
                    + (view == null || view.kid() == null ? "" : " (kid " + Cli.shown(view.kid()) + ")")
                    + "; issue it from the key directory whose verify-keys.jwks.json the gateway reads";
        }
        if (reason.contains("grant_not_yet_valid")) {
            return refused + " (grant_not_yet_valid): the issuing host's clock is ahead of "
                    + "the gateway's; fix the clocks (NTP)";
        }
        if (reason.contains("grant_wrong_audience")) {
            return refused + " (grant_wrong_audience): that is a grant, not a connection "
                    + "token; use 'env-gateway token issue'";
        }
        return refused + " (" + Cli.shown(reason) + "): issue a new one with 'env-gateway token issue'";
    }

    /** " (environment 'e1', expires T)" from the token's claims, or empty. */
    static String describe(String token) {
        TokenView view = TokenView.peek(token);
        if (view == null) {
            return "";
        }
        return " (environment '" + Cli.shown(view.env()) + "'" + (view.exp() == null ? "" : ", expires "
                + view.exp()) + ")";
    }
}
