package dev.previewtunnel.testing;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The in-process half of a module's input fuzz test: derives one seed per case from the run's seed, spreads the
 * cases over a few worker threads (each with its own {@link Worker}: generator, pipeline, per-case judge), stops at
 * the tenth failure or the hard time limit, and fails with every failing case and the seed that replays it
 * ({@code -Dfuzz.seed=S -Dfuzz.case=N}). What a case is and what is asserted per case stay in the module.
 */
public final class FuzzRunner {
    private static final int MAX_FAILURES = 10;
    private static final int MAX_TRACE = 4000;

    /**
     * One run's parameters: {@code -Dfuzz.seed} (default per module), {@code -Dfuzz.<name>.cases} (default
     * 100,000), {@code -Dfuzz.<name>.socketCases} (default 300), {@code -Dfuzz.<name>.maxSeconds} (default 300),
     * {@code -Dfuzz.threads} (default up to 2) and {@code -Dfuzz.case} (replay one case verbosely).
     */
    public record Settings(String name, long seed, int cases, int socketCases, int threads, Duration hardLimit,
                           long onlyCase) {
        public static Settings fromProperties(String name, long defaultSeed) {
            return new Settings(name, Long.getLong("fuzz.seed", defaultSeed),
                    Integer.getInteger("fuzz." + name + ".cases", 100_000),
                    Integer.getInteger("fuzz." + name + ".socketCases", 300),
                    Integer.getInteger("fuzz.threads", Math.max(1, Math.min(2,
                            Runtime.getRuntime().availableProcessors()))),
                    Duration.ofSeconds(Long.getLong("fuzz." + name + ".maxSeconds", 300)),
                    Long.getLong("fuzz.case", -1L));
        }

        public boolean replaying() {
            return onlyCase >= 0;
        }

        /** The seed of case {@code index} of the stream {@code salt} (0 for the in-process cases). */
        public long caseSeed(long salt, long index) {
            return FuzzRunner.caseSeed(seed ^ salt, index);
        }
    }

    /** One worker thread's state: makes and runs cases; closed when the thread is done. */
    public interface Worker<C> extends AutoCloseable {
        C generate(long index, long seed);

        /** Runs one case and throws when it breaks a property. */
        void run(C c, boolean verbose) throws Exception;

        /** The case and its input, printably, for a failure report (the trace is added). */
        String describe(C c);

        @Override
        void close();
    }

    private final Settings settings;
    private final AtomicLong done = new AtomicLong();

    public FuzzRunner(Settings settings) {
        this.settings = settings;
    }

    /** Cases run so far. */
    public long done() {
        return done.get();
    }

    /** Runs case {@code -Dfuzz.case} alone, verbosely; failures propagate. */
    public <C> void replay(Supplier<? extends Worker<C>> workers) throws Exception {
        try (Worker<C> w = workers.get()) {
            long n = settings.onlyCase();
            C c = w.generate(n, settings.caseSeed(0, n));
            System.out.println("[fuzz] replaying " + w.describe(c));
            w.run(c, true);
        }
    }

    /** Runs every case; fails listing the failing cases with the seed that replays them. */
    public <C> void runAll(Supplier<? extends Worker<C>> workers) throws Exception {
        ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
        AtomicBoolean stop = new AtomicBoolean();
        long deadline = System.nanoTime() + settings.hardLimit().toNanos();
        int threads = settings.threads();
        ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "fuzz-" + settings.name());
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<?>> running = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int first = t;
                running.add(pool.submit(() -> {
                    try (Worker<C> w = workers.get()) {
                        for (long i = first; i < settings.cases() && !stop.get(); i += threads) {
                            if (System.nanoTime() > deadline) {
                                failures.add("time limit " + settings.hardLimit() + " reached after " + done.get()
                                        + " cases");
                                stop.set(true);
                                break;
                            }
                            C c = w.generate(i, settings.caseSeed(0, i));
                            try {
                                w.run(c, false);
                            } catch (Throwable e) {
                                failures.add(w.describe(c) + "\n  " + trace(e));
                                if (failures.size() >= MAX_FAILURES) {
                                    stop.set(true);
                                }
                            }
                            done.incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : running) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        if (!failures.isEmpty()) {
            fail(failures.size() + " failing case(s) (seed " + settings.seed() + "; re-run one with -Dfuzz.seed="
                    + settings.seed() + " -Dfuzz.case=N):\n" + String.join("\n\n", failures));
        }
        assertEquals(settings.cases(), done.get());
    }

    /** SplitMix64 of the seed and the index: independent, reproducible per-case seeds. */
    public static long caseSeed(long seed, long index) {
        long z = seed + (index + 1) * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    public static long processCpuMillis() {
        return ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
                ? os.getProcessCpuTime() / 1_000_000 : -1;
    }

    static String trace(Throwable t) {
        StringWriter sw = new StringWriter();
        t.printStackTrace(new PrintWriter(sw));
        String trace = sw.toString();
        return trace.length() > MAX_TRACE ? trace.substring(0, MAX_TRACE) + "..." : trace;
    }
}
