package dev.previewtunnel.grants;

/**
 * What a grant allows: one session in one environment to reach one loopback target.
 *
 * @param protocol "tcp" (default when null) or "http"
 * @param provider optional, informational (which coding agent/provider opened the preview)
 * @param thread   optional, informational (conversation/thread id)
 */
public record GrantSpec(String environment, String session, String targetHost, int targetPort,
                        String protocol, String provider, String thread) {

    public static final String TCP = "tcp";
    public static final String HTTP = "http";

    public GrantSpec {
        requireNonBlank(environment, "environment");
        requireNonBlank(session, "session");
        requireNonBlank(targetHost, "targetHost");
        if (targetPort < 1 || targetPort > 65535) {
            throw new IllegalArgumentException("targetPort must be 1..65535, got " + targetPort);
        }
        protocol = protocol == null ? TCP : protocol;
        if (!TCP.equals(protocol) && !HTTP.equals(protocol)) {
            throw new IllegalArgumentException("protocol must be \"tcp\" or \"http\"");
        }
        // Normalise once here so the claim and the verifier's comparison use the same form.
        targetHost = TargetHost.normalise(targetHost);
        if (provider != null) requireNonBlank(provider, "provider");
        if (thread != null) requireNonBlank(thread, "thread");
    }

    /** A TCP grant with no provider/thread. */
    public static GrantSpec tcp(String environment, String session, String targetHost, int targetPort) {
        return new GrantSpec(environment, session, targetHost, targetPort, TCP, null, null);
    }

    private static void requireNonBlank(String value, String name) {
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(name + " must not be blank");
        }
    }
}
