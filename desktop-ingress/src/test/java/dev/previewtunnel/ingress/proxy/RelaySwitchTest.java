package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.testing.SharedLoopChannel;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpServerCodec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;


import static dev.previewtunnel.testing.SharedLoopChannel.ascii;
import static dev.previewtunnel.testing.SharedLoopChannel.sentText;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * The switch to a raw relay between an {@link EmbeddedChannel} browser (HTTP codec and a stand-in proxy handler
 * under their pipeline names) and an embedded stream on its loop: bytes either side sent before the switch was
 * complete go first and in order, both HTTP handlers leave the browser, and bytes then flow raw; a browser gone
 * before the switch releases what was kept.
 */
class RelaySwitchTest {
    private final ChannelInboundHandlerAdapter proxy = new ChannelInboundHandlerAdapter();
    private EmbeddedChannel browser;
    private EmbeddedChannel stream;
    private RelaySwitch relay;

    @BeforeEach
    void setUp() {
        browser = new EmbeddedChannel();
        browser.pipeline().addLast(BrowserPipeline.HTTP_CODEC, new HttpServerCodec());
        browser.pipeline().addLast(BrowserPipeline.PROXY, proxy);
        stream = SharedLoopChannel.stream(browser.eventLoop());
        relay = new RelaySwitch(browser, proxy, new PipelinedRequests());
    }

    @AfterEach
    void tearDown() {
        stream.finishAndReleaseAll();
        browser.finishAndReleaseAll();
    }

    @Test
    void bytesSentBeforeTheSwitchGoFirstAndThenBytesFlowRaw() {
        relay.fromBrowser(ascii("client-early "));
        relay.fromTarget(ascii("target-early ")); // the browser's HTTP codec is still there: kept
        assertNull(browser.readOutbound(), "nothing raw through the HTTP encoder");

        relay.complete(stream, () -> { });
        assertNull(browser.pipeline().get(BrowserPipeline.HTTP_CODEC));
        assertNull(browser.pipeline().get(BrowserPipeline.PROXY));
        assertEquals("client-early ", sentText(stream));
        assertEquals("target-early ", sentText(browser));

        browser.writeInbound(ascii("GET not-http-any-more"));
        browser.runPendingTasks();
        assertEquals("GET not-http-any-more", sentText(stream), "the relay carries the browser's bytes as they are");
        stream.writeInbound(ascii("raw answer"));
        browser.runPendingTasks();
        assertEquals("raw answer", sentText(browser));
    }

    @Test
    void aBrowserGoneBeforeTheSwitchReleasesWhatWasKeptAndSendsNothing() {
        ByteBuf fromBrowser = ascii("client-early");
        ByteBuf fromTarget = ascii("target-early");
        relay.fromBrowser(fromBrowser);
        relay.fromTarget(fromTarget);
        relay.abandon();
        assertEquals(0, fromBrowser.refCnt(), "released");
        assertEquals(0, fromTarget.refCnt(), "released");
        assertNull(browser.readOutbound());
        assertNull(stream.readOutbound());
    }
}
