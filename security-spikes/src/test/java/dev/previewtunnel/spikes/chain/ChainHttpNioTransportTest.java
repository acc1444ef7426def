package dev.previewtunnel.spikes.chain;

import org.junit.jupiter.api.BeforeAll;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@link ChainHttpTest}'s whole chain again with the NIO transport forced ({@code -Dptun.transport=nio}, see
 * {@code Transports}) on both sides: the fallback used where the native epoll transport does not load, which the
 * Linux test machines otherwise never run. The ingress runs on two event loops here ({@code --io-threads 2}; the
 * default is one), so that the chain suite also runs with browser connections and tunnel connections spread over
 * several loops (each relay's two sides on one of them) without a third pass over the suite.
 */
class ChainHttpNioTransportTest extends ChainHttpTest {
    private static final String PROPERTY = "ptun.transport";

    /**
     * Runs after {@link ChainHttpTest#start()}: JUnit runs a superclass's {@code @BeforeAll} first even when a
     * static method of the same name would hide it in Java (the earlier version did so, and left that stack, its
     * app and its keys directory running until the JVM ended). So that stack is closed, and the whole chain
     * started again with the property set, which is then restored.
     */
    @BeforeAll
    static void restartOnNio() throws Exception {
        stop();
        String before = System.getProperty(PROPERTY);
        System.setProperty(PROPERTY, "nio");
        try {
            ChainHttpTest.start();
            stack.restartIngress(stack.ingressConfig().withIoThreads(2), null);
            client = ProxyClients.httpClient(stack.proxy(), stack.session());
        } finally {
            if (before == null) {
                System.clearProperty(PROPERTY);
            } else {
                System.setProperty(PROPERTY, before);
            }
        }
        assertEquals("nio", stack.gateway().transportName(), "the gateway runs on NIO");
        assertEquals("nio", stack.ingress().transportName(), "the ingress runs on NIO");
        assertEquals(2, stack.ingress().config().ioThreads(), "the ingress runs on two event loops");
    }
}
