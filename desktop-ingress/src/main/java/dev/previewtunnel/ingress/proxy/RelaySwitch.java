package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.mux.relay.RelayHandler;
import dev.previewtunnel.mux.relay.StalledStreams;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.handler.codec.http.HttpResponse;

import java.util.ArrayDeque;

/**
 * The one place a browser connection stops being HTTP and becomes a raw byte relay to its stream: after
 * {@code 200 Connection established} for a {@code CONNECT}, or after a {@code 101 Switching Protocols} answer to an
 * absolute-form upgrade (WebSockets). Bytes that arrive on either side before the switch is complete (the client's
 * right after its {@code CONNECT} head, the target's right after its 101 in the same read, the ones each HTTP
 * decoder still held) are kept here, in order, and go first. At most one read's worth: neither side is read on
 * until the relay reads.
 */
final class RelaySwitch {
    private final Channel browser;
    private final ChannelHandler proxy;
    private final PipelinedRequests pipelined;
    /** Browser bytes for the target, until the target is known. */
    private final ArrayDeque<ByteBuf> toTarget = new ArrayDeque<>();
    /** Target bytes for the browser, until the browser's HTTP codec is gone. */
    private final ArrayDeque<ByteBuf> toBrowser = new ArrayDeque<>();
    private Channel target;

    /** {@code proxy}: the browser's HTTP handler, removed when the relay takes over. */
    RelaySwitch(Channel browser, ChannelHandler proxy, PipelinedRequests pipelined) {
        this.browser = browser;
        this.proxy = proxy;
        this.pipelined = pipelined;
    }

    /** Raw bytes from the browser (after the {@code CONNECT} head, or left in its HTTP decoder). Owns {@code buf}. */
    void fromBrowser(ByteBuf buf) {
        if (target != null) {
            target.write(buf);
        } else {
            toTarget.add(buf);
        }
    }

    /** Raw bytes from the target that followed its 101. Owns {@code buf}. */
    void fromTarget(ByteBuf buf) {
        if (!browser.isActive()) {
            buf.release();
        } else if (browser.pipeline().get(BrowserPipeline.HTTP_CODEC) != null) {
            toBrowser.add(buf);
        } else {
            browser.writeAndFlush(buf);
        }
    }

    /**
     * Sends the browser {@code answer} (the 200 or the 101) and, once it has taken it, completes the switch to
     * {@code stream}; if it could not, closes the stream. Until the relay is linked nothing reads the stream, so it
     * counts as stalled: a hostile gateway's 1-byte DATA frames there are bounded and reset as a stalled relay's are
     * (StalledStreams; docs/security.md, hostile peers, item 11). RelayHandler unmarks it when it links.
     */
    void answerThenComplete(HttpResponse answer, Channel stream, Runnable detachTargetHttp) {
        StalledStreams.mark(stream, true);
        browser.writeAndFlush(answer).addListener(w -> {
            if (!w.isSuccess()) {
                stream.close();
                return;
            }
            complete(stream, detachTargetHttp);
        });
    }

    /**
     * Once the 200 or the 101 reached the browser: takes HTTP off the target ({@code detachTargetHttp}; its leftover
     * bytes come back through {@link #fromTarget}) and off the browser, and links the two byte for byte.
     */
    void complete(Channel stream, Runnable detachTargetHttp) {
        detachTargetHttp.run();
        target = stream;
        ByteBuf b;
        while ((b = toTarget.poll()) != null) {
            stream.write(b);
        }
        if (browser.pipeline().get(BrowserPipeline.HTTP_CODEC) != null) {
            browser.pipeline().remove(BrowserPipeline.HTTP_CODEC); // leftover bytes reach fromBrowser
        }
        stream.flush();
        while ((b = toBrowser.poll()) != null) {
            browser.write(b);
        }
        browser.flush();
        pipelined.releaseAll(); // decoded as HTTP after a CONNECT or an upgrade: not this relay's bytes
        browser.pipeline().remove(proxy);
        RelayHandler.link(browser, stream, null); // the stream's StreamRecord writes its stream_closed
    }

    /** The browser left before the relay took over. */
    void abandon() {
        ByteBuf b;
        while ((b = toTarget.poll()) != null) {
            b.release();
        }
        while ((b = toBrowser.poll()) != null) {
            b.release();
        }
        if (target != null) {
            target.close();
        }
    }
}
