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

    /** Hides {@link ChainHttpTest#start()}: the stack starts with the property set, which is then restored. */
    @BeforeAll
    static void start() throws Exception {
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
