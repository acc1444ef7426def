package dev.previewtunnel.ingress.session;

/**
 * What a browser session's requests for hosts it has no grant for do.
 * <ul>
 *   <li>{@link #DENY} (default): a readable 403 {@code not_granted} page; nothing leaves the desktop.</li>
 *   <li>{@link #DIRECT}: public internet hosts are reached directly from the desktop, as without a proxy.
 *       Never the desktop's own loopback, link-local or private ranges: a name is resolved once, every
 *       address must be public, and the checked address is what is dialed.</li>
 * </ul>
 */
public enum EgressPolicy {
    DENY,
    DIRECT
}
