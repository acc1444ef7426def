package dev.previewtunnel.testing;

import io.netty.channel.Channel;

import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/** Reads state a channel's event loop owns from a test thread: the read runs on that loop, between two of its turns. */
public final class OnLoop {
    private OnLoop() {
    }

    /** {@code what}'s result, computed on {@code channel}'s event loop; fails the test after 10 s or on its error. */
    public static <T> T call(Channel channel, Callable<T> what) {
        try {
            return channel.eventLoop().submit(what).get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }
}
