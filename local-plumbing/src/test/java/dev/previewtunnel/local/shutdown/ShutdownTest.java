package dev.previewtunnel.local.shutdown;

import dev.previewtunnel.mux.relay.Transports;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.Future;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ShutdownTest {
    private final Transports transports = Transports.best();

    @Test
    void andWaitReturnsOnceTheLoopsHaveEnded() {
        EventLoopGroup group = transports.newGroup(2, "shutdown-test");
        group.next().execute(() -> { }); // the loops have started
        assertTrue(Shutdown.andWait(group));
        assertTrue(group.isTerminated());
    }

    @Test
    void andWaitIsBoundedWhenALoopIsWedged() throws InterruptedException {
        EventLoopGroup group = transports.newGroup(1, "shutdown-test-wedged");
        CountDownLatch release = new CountDownLatch(1);
        group.next().execute(() -> {
            try {
                release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        long start = System.nanoTime();
        assertFalse(Shutdown.andWait(group), "a loop stuck in a task cannot end");
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(Shutdown.WAIT_SECONDS + 3));
        release.countDown();
        assertTrue(group.terminationFuture().await(10, TimeUnit.SECONDS));
    }

    @Test
    void beginReturnsWithoutWaitingAndTheGroupEnds() throws InterruptedException {
        EventLoopGroup group = transports.newGroup(1, "shutdown-test-begin");
        Future<?> stopped = Shutdown.begin(group);
        assertTrue(group.isShuttingDown());
        assertTrue(stopped.await(10, TimeUnit.SECONDS));
        assertTrue(group.isTerminated());
    }

    @Test
    void closeClosesAChannelAndWaitsForIt() {
        EventLoopGroup group = transports.newGroup(1, "shutdown-test-close");
        try {
            Channel server = new ServerBootstrap().group(group).channel(transports.serverSocketChannel())
                    .childHandler(new ChannelInboundHandlerAdapter())
                    .bind(new InetSocketAddress("127.0.0.1", 0)).syncUninterruptibly().channel();
            assertTrue(Shutdown.close(server));
            assertFalse(server.isOpen());
        } finally {
            Shutdown.andWait(group);
        }
    }
}
