package dev.previewtunnel.local.net;

import java.net.SocketAddress;
import java.net.UnknownHostException;

/**
 * Where a server listens: a TCP {@link ListenAddress} ({@code 127.0.0.1:7443}, {@code [::1]:7443}) or a Unix domain
 * socket ({@link UnixSocketPath}, {@code unix:/run/user/1000/ptun/gateway.sock}).
 */
public sealed interface ListenEndpoint permits ListenAddress, UnixSocketPath {

    /**
     * Parses without resolving anything: {@code unix:PATH} is a Unix socket, anything else HOST:PORT.
     *
     * @throws IllegalArgumentException with the problem alone, never quoting the input
     */
    static ListenEndpoint parse(String text) {
        if (text != null && text.startsWith(UnixSocketPath.SCHEME)) {
            return UnixSocketPath.parse(text);
        }
        return ListenAddress.parse(text);
    }

    /** The address to bind: an {@code InetSocketAddress} (a name resolved once) or a JDK UnixDomainSocketAddress. */
    SocketAddress resolve() throws UnknownHostException;
}
