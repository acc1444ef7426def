package dev.previewtunnel.local.audit;

import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The audit line's {@code ts} is exactly {@link Instant#toString()}, whatever second the cache last held. */
class InstantTextTest {
    private static final long YEAR_2000 = 946_684_800L;
    private static final long YEAR_2100 = 4_102_444_800L;

    @Test
    void everyKindOfFraction() {
        long s = 1_796_400_000L;
        for (int nano : new int[] {0, 1, 9, 10, 999, 1_000, 7_000, 999_000, 1_000_000, 5_000_000, 120_000_000,
                123_000_000, 123_400_000, 123_456_000, 123_456_700, 123_456_789, 999_999_999, 100_000_000, 1_001}) {
            Instant t = Instant.ofEpochSecond(s, nano);
            assertEquals(t.toString(), InstantText.of(t), "nano " + nano);
        }
    }

    @Test
    void randomInstantsInAndAcrossSeconds() {
        SplittableRandom r = new SplittableRandom(21);
        long second = YEAR_2000;
        for (int i = 0; i < 200_000; i++) {
            switch (r.nextInt(4)) {
                case 0 -> second = r.nextLong(YEAR_2000, YEAR_2100); // a new second: the cache is replaced
                case 1 -> second++;                                  // the next one, as a clock moves
                default -> { }                                       // the same second: the cache is used
            }
            int nano = switch (r.nextInt(4)) {
                case 0 -> r.nextInt(1_000) * 1_000_000;              // milliseconds, as some clocks give
                case 1 -> r.nextInt(1_000_000) * 1_000;              // microseconds, as Linux's does here
                case 2 -> r.nextInt(1_000_000_000);
                default -> 0;
            };
            Instant t = Instant.ofEpochSecond(second, nano);
            assertEquals(t.toString(), InstantText.of(t));
        }
    }

    @Test
    void farFromNow() {
        for (Instant t : new Instant[] {Instant.EPOCH, Instant.ofEpochSecond(-1, 5), Instant.ofEpochSecond(-62_167_219_200L),
                Instant.ofEpochSecond(253_402_300_800L, 1_000), Instant.MAX, Instant.MIN}) {
            assertEquals(t.toString(), InstantText.of(t));
        }
    }

    @Test
    void now() {
        String ts = InstantText.now();
        assertEquals(Instant.parse(ts).toString(), ts);
    }
}
