package dev.previewtunnel.sampleapp;

import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;

/**
 * Auto-registered (META-INF/services) JUnit extension that fails a test class if Netty's leak detector reports
 * a leak. Installs a {@link ResourceLeakDetectorFactory} whose detectors record reports instead of only logging
 * them (logging may be a no-op here), and after each class forces GC and an allocation so pending leak
 * references get polled. Tests run with {@code -Dio.netty.leakDetection.level=PARANOID}.
 */
public final class LeakGuard implements BeforeAllCallback, AfterAllCallback {
    private static final List<String> LEAKS = new ArrayList<>();
    private static boolean installed;

    static synchronized void install() {
        if (installed) {
            return;
        }
        installed = true;
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new ResourceLeakDetectorFactory() {
            @SuppressWarnings("deprecation")
            @Override
            public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval,
                                                                      long maxActive) {
                return new RecordingDetector<>(resource, samplingInterval);
            }

            @Override
            public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval) {
                return new RecordingDetector<>(resource, samplingInterval);
            }
        });
    }

    private static final class RecordingDetector<T> extends ResourceLeakDetector<T> {
        RecordingDetector(Class<?> type, int samplingInterval) {
            super(type, samplingInterval);
        }

        @Override
        protected boolean needReport() {
            return true;
        }

        @Override
        protected void reportTracedLeak(String resourceType, String records) {
            record("LEAK " + resourceType + records);
        }

        @Override
        protected void reportUntracedLeak(String resourceType) {
            record("LEAK " + resourceType + " (untraced)");
        }

        private static void record(String s) {
            synchronized (LEAKS) {
                LEAKS.add(s);
            }
        }
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        install();
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        // Two GC cycles, each confirmed by a weak sentinel being enqueued (a condition wait, not a sleep),
        // then allocations so the detectors poll their reference queues.
        for (int round = 0; round < 2; round++) {
            ReferenceQueue<Object> q = new ReferenceQueue<>();
            WeakReference<Object> sentinel = new WeakReference<>(new Object(), q);
            for (int i = 0; i < 50 && q.poll() == null; i++) {
                System.gc();
                if (q.remove(100) != null) {
                    break;
                }
            }
            sentinel.clear();
            for (int i = 0; i < 4; i++) {
                ByteBufAllocator.DEFAULT.buffer(16).release();
                ByteBufAllocator.DEFAULT.directBuffer(16).release();
                ByteBufAllocator.DEFAULT.heapBuffer(16).release();
            }
        }
        List<String> leaks;
        synchronized (LEAKS) {
            leaks = new ArrayList<>(LEAKS);
            LEAKS.clear();
        }
        if (!leaks.isEmpty()) {
            throw new AssertionError("Netty reported " + leaks.size() + " leak(s) by the end of "
                    + context.getDisplayName() + ":\n" + String.join("\n\n", leaks));
        }
    }
}
