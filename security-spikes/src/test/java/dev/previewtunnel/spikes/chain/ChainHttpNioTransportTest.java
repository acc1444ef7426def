package dev.previewtunnel.spikes.chain;

import org.junit.jupiter.api.BeforeAll;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@link ChainHttpTest}'s whole chain again with the NIO transport forced ({@code -Dptun.transport=nio}, see
 * {@code Transports}) on both sides: the fallback used where the native epoll transport does not load, which the
 * Linux test machines otherwise never run.
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
        } finally {
            if (before == null) {
                System.clearProperty(PROPERTY);
            } else {
                System.setProperty(PROPERTY, before);
            }
        }
        assertEquals("nio", stack.gateway().transportName(), "the gateway runs on NIO");
        assertEquals("nio", stack.ingress().transportName(), "the ingress runs on NIO");
    }
}
