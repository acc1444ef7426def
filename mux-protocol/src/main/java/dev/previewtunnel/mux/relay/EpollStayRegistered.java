package dev.previewtunnel.mux.relay;

import io.netty.channel.IoHandle;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerContext;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.IoOps;
import io.netty.channel.IoRegistration;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollIoOps;
import io.netty.util.concurrent.ThreadAwareExecutor;

/**
 * Netty's epoll handler, except that a socket asking for no event at all stays in the epoll set, asking for
 * {@code EPOLLET} alone. Netty 4.2.18 (and 4.2.21) takes such a socket out of the set (netty/netty#16689) but keeps
 * its registration as added, so its next request (epoll_ctl MOD) fails with ENOENT: a socket whose input ended, with
 * nothing to read or write for a while, then fails its next wait for room to write, and Netty shuts its output. A
 * relay answering a half-closed side with more than the buffers hold cut the answer short (RelaySocketEndingTest).
 * Edge-triggered and asking for nothing, the socket reports a hang-up once per change of its state, never
 * continuously (the loop of netty/netty#16683 that the removal avoids). Drop it with a Netty that fixes this.
 */
final class EpollStayRegistered {
    private EpollStayRegistered() {
    }

    static IoHandlerFactory newFactory() {
        IoHandlerFactory epoll = EpollIoHandler.newFactory();
        return new IoHandlerFactory() {
            @Override
            public IoHandler newHandler(ThreadAwareExecutor executor) {
                return new Handler(epoll.newHandler(executor));
            }

            @Override
            public boolean isChangingThreadSupported() {
                return epoll.isChangingThreadSupported();
            }
        };
    }

    /** Netty's handler, handing out {@link Registration}s. */
    private record Handler(IoHandler epoll) implements IoHandler {
        @Override
        public void initialize() {
            epoll.initialize();
        }

        @Override
        public int run(IoHandlerContext context) {
            return epoll.run(context);
        }

        @Override
        public void prepareToDestroy() {
            epoll.prepareToDestroy();
        }

        @Override
        public void destroy() {
            epoll.destroy();
        }

        @Override
        public IoRegistration register(IoHandle handle) throws Exception {
            return new Registration(epoll.register(handle));
        }

        @Override
        public void wakeup() {
            epoll.wakeup();
        }

        @Override
        public boolean isCompatible(Class<? extends IoHandle> handleType) {
            return epoll.isCompatible(handleType);
        }
    }

    /** Netty's registration, asking for {@code EPOLLET} where it would ask for nothing. */
    private record Registration(IoRegistration epoll) implements IoRegistration {
        @Override
        public <T> T attachment() {
            return epoll.attachment();
        }

        @Override
        public long submit(IoOps ops) {
            if (ops instanceof EpollIoOps interest && interest.value() == EpollIoOps.NONE.value()) {
                epoll.submit(EpollIoOps.EPOLLET);
                return 0; // what Netty answers for no interest (its callers ignore it)
            }
            return epoll.submit(ops);
        }

        @Override
        public boolean isValid() {
            return epoll.isValid();
        }

        @Override
        public boolean cancel() {
            return epoll.cancel();
        }
    }
}
