package dev.previewtunnel.ingress.browser;

import java.io.IOException;

/** How {@link DevTools} messages travel: a WebSocket to a DevTools port, or the pipe of {@code --remote-debugging-pipe}. */
interface DevToolsTransport {
    /** What the transport hands to {@link DevTools}: each whole message, in order, then at most one end. */
    interface Inbound {
        void message(String text);

        void ended(String why);
    }

    /** Sends one whole message; at most one caller at a time (DevTools serialises). */
    void send(String message) throws IOException;

    /** Closes the transport; waits a bounded time for a graceful close where there is one. */
    void close();
}
