package dev.previewtunnel.ingress.ssh;

import java.util.List;

/**
 * A TCP port the remote SSH user listens on, as {@code env-gateway ports --json} lists it: {@code address} is the
 * first of its {@code addresses} (e.g. {@code 127.0.0.1}; a port bound on several has them all).
 */
public record RemotePort(int port, String address, List<String> addresses) {
    public RemotePort {
        addresses = addresses == null ? List.of() : List.copyOf(addresses);
    }

    public RemotePort(int port, String address) {
        this(port, address, address == null ? List.of() : List.of(address));
    }
}
