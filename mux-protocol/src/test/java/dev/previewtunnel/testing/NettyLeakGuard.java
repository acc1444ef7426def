package dev.previewtunnel.testing;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.ArrayList;
import java.util.List;

/**
 * Fails a test class when Netty's leak detector (PARANOID in every test run, see the parent POM) reports a
 * leaked buffer. Registered for every test class through JUnit's extension auto-detection (the test-jar's
 * META-INF/services), so a module only needs the mux-protocol test-jar on its test classpath.
 *
 * <p>Netty reports a leak when it notices, during a later allocation, that a tracked buffer was collected
 * without being released; after each class this forces collections and allocations until reports settle.
 */
public final class NettyLeakGuard implements AfterAllCallback {
    private static final List<String> LEAKS = new ArrayList<>();

    static {
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new ResourceLeakDetectorFactory() {
            @Override
            public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval,
                                                                       long maxActive) {
                return new RecordingDetector<>(resource, samplingInterval);
            }
        });
    }

    private static final class RecordingDetector<T> extends ResourceLeakDetector<T> {
        RecordingDetector(Class<T> resource, int samplingInterval) {
            super(resource, samplingInterval);
        }

        @Override
        protected void reportTracedLeak(String resourceType, String records) {
            record("LEAK " + resourceType + records);
            super.reportTracedLeak(resourceType, records);
        }

        @Override
        protected void reportUntracedLeak(String resourceType) {
            record("LEAK " + resourceType + " (untraced)");
            super.reportUntracedLeak(resourceType);
        }
    }

    private static void record(String leak) {
        synchronized (LEAKS) {
            LEAKS.add(leak);
        }
    }

    /** Forces pending leak reports out and returns (and clears) what was reported so far. */
    public static List<String> collectLeaks() {
        for (int i = 0; i < 5; i++) {
            System.gc();
            System.runFinalization();
            // Leak reports are polled on allocation.
            for (int j = 0; j < 64; j++) {
                ByteBuf a = PooledByteBufAllocator.DEFAULT.directBuffer(16);
                a.release();
                ByteBuf b = UnpooledByteBufAllocator.DEFAULT.heapBuffer(16);
                b.release();
                ByteBuf c = PooledByteBufAllocator.DEFAULT.heapBuffer(16);
                c.release();
            }
        }
        synchronized (LEAKS) {
            List<String> copy = new ArrayList<>(LEAKS);
            LEAKS.clear();
            return copy;
        }
    }

    @Override
    public void afterAll(ExtensionContext context) {
        List<String> leaks = collectLeaks();
        if (!leaks.isEmpty()) {
            throw new AssertionError(leaks.size() + " Netty buffer leak(s) reported during "
                    + context.getDisplayName() + ":\n" + String.join("\n\n", leaks));
        }
    }
}
