package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.mux.wire.TunnelError;

/**
 * The words of a tunnel error's page: what happened, the generic action that fixes it (a {@code FrontDoor} may
 * give a richer one), and whether the condition can clear by itself, so that the page reloads when it does. The
 * words are the ingress's own: a cause's exception text never reaches a page (it stays in the log).
 */
final class ErrorWords {
    private ErrorWords() {
    }

    /** What happened, in words, when the refusal carries no more specific words of the ingress. */
    static String happened(TunnelError error) {
        return switch (error) {
            case NOT_GRANTED -> "This browser session holds no grant for this address, so the request was not "
                    + "forwarded to any environment.";
            case GRANT_EXPIRED -> "The grant that lets this browser session reach this preview is past its expiry.";
            case GRANT_REVOKED -> "The grant, or this browser session, was revoked in the environment.";
            case GRANT_REFUSED -> "The environment gateway did not accept the grant: it was signed by another key, "
                    + "or is for another environment, session or target.";
            case POLICY_REFUSED -> "The target address is outside what the address policy allows.";
            case TARGET_REFUSED -> "The tunnel works, but nothing accepted the connection on the granted port in "
                    + "the environment: the dev server is not running, or listens on another address or port.";
            case DIAL_TIMEOUT -> "The target in the environment did not accept the connection in time.";
            case TARGET_UNREACHABLE -> "The target's name could not be resolved, or its address could not be "
                    + "reached, from the environment.";
            case GATEWAY_UNREACHABLE -> "This desktop could not connect to the environment gateway: the gateway is "
                    + "not running, or the way to it (an SSH connection, a forwarded port) is down.";
            case GATEWAY_TIMEOUT -> "The environment gateway did not answer the request to open a connection in "
                    + "time.";
            case TOO_MANY_STREAMS -> "The limit on connections open at once to the environment was reached.";
            case SHUTTING_DOWN -> "The environment gateway is shutting down or restarting and takes no new "
                    + "connections.";
            case BAD_REQUEST -> "The browser sent a request the proxy cannot forward.";
            case STREAM_RESET -> "The connection to the preview was cut before its answer was complete.";
            default -> "The environment gateway answered in a way this desktop does not understand (do their "
                    + "versions differ?).";
        };
    }

    /** The generic action that fixes the error, for {@code desktop-ingress run}; names the session's id. */
    static String fix(TunnelError error, String authority, String sessionId) {
        String session = sessionId == null ? "SESSION" : sessionId;
        return switch (error) {
            case NOT_GRANTED -> "Open one of this session's previews from http://preview.localhost/, or issue a "
                    + "grant for the target in the environment (env-gateway grant issue --keys DIR --env ENV "
                    + "--session " + session + " --target HOST:PORT > FILE) and attach it here: desktop-ingress "
                    + "grant add --session " + session + " --grant-file FILE; then reload this page.";
            case GRANT_EXPIRED, GRANT_REVOKED -> "Issue a new grant in the environment (env-gateway grant issue "
                    + "... --session " + session + ") and attach it: desktop-ingress grant add --session " + session
                    + " --grant-file FILE; or start the ingress with --grant-refresh-command so that grants are "
                    + "renewed before they expire.";
            case GRANT_REFUSED -> "Issue the grant with the environment's own keys, for its --env and for session "
                    + session + " (env-gateway grant issue), and attach it again.";
            case POLICY_REFUSED -> "Grant a loopback target in the environment, or widen the gateway's policy "
                    + "(env-gateway serve --allow-target CIDR).";
            case TARGET_REFUSED, DIAL_TIMEOUT, TARGET_UNREACHABLE -> "Start the dev server in the environment so "
                    + "that it listens on the granted port (" + authority + " here); this page reloads when it "
                    + "answers.";
            case GATEWAY_UNREACHABLE, GATEWAY_TIMEOUT -> "Start the gateway in the environment (env-gateway serve) "
                    + "and check the way to it (the --gateway URL, the SSH forward); desktop-ingress doctor checks "
                    + "each step. This page reloads when the gateway answers.";
            case TOO_MANY_STREAMS -> "Wait a moment or close other tabs of this preview; this page reloads when a "
                    + "connection is free.";
            case SHUTTING_DOWN -> "Wait for the gateway to come back; this page reloads when it does.";
            case BAD_REQUEST -> "Check the address in the address bar: only http:// addresses and HTTPS through "
                    + "CONNECT are forwarded.";
            case STREAM_RESET -> "Reload the page; if it keeps failing, check the dev server's own log.";
            default -> "Update the desktop-ingress and env-gateway to the same version.";
        };
    }

    /**
     * Whether the condition can clear without the browser doing anything, so the page reloads itself: the target or
     * gateway coming back, a connection freeing up; an expired or revoked grant only when a renewal may come
     * ({@code renewals}: a grant refresher or a front door is set). Not a request the browser got wrong, a grant or
     * address the environment refuses, nor a grant never attached (its page would poll for as long as it is open).
     */
    static boolean clears(TunnelError error, boolean renewals) {
        return switch (error) {
            case GRANT_EXPIRED, GRANT_REVOKED -> renewals;
            case BAD_REQUEST, GRANT_REFUSED, POLICY_REFUSED, PROTOCOL_ERROR, NOT_GRANTED -> false;
            default -> true;
        };
    }
}
