package dev.previewtunnel.ingress.proxy;

/**
 * {@link UpstreamResponseTest}'s tests with the browser connections on an event loop of their own: the tunnel
 * connection and its streams on another. The case of a pool smaller than the ingress's loops (its default of two
 * connections on a machine with more than two cores), where every decoded response part, the end of each read and
 * each early end cross threads on their way to the browser, and the browser side asks the stream for more reads from
 * its own loop.
 */
class UpstreamResponseOnAnotherLoopTest extends UpstreamResponseTest {
    @Override
    boolean browserOnAnotherLoop() {
        return true;
    }
}
