package dev.previewtunnel.ingress.status;

import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class RecentErrorsTest {
    @Test
    void keepsTheLastTwentyOfEachSessionNewestFirst() {
        RecentErrors errors = new RecentErrors();
        for (int i = 0; i < 50; i++) {
            errors.record("s1", new RecentErrors.Entry(Instant.EPOCH.plusSeconds(i), "localhost:" + i, "c", "w"));
        }
        errors.record("s2", new RecentErrors.Entry(Instant.EPOCH, "other:1", "c", "w"));
        List<RecentErrors.Entry> s1 = errors.of("s1");
        assertEquals(RecentErrors.PER_SESSION, s1.size());
        assertEquals("localhost:49", s1.get(0).authority());
        assertEquals("localhost:30", s1.get(s1.size() - 1).authority());
        assertEquals(List.of("other:1"), errors.of("s2").stream().map(RecentErrors.Entry::authority).toList());
        errors.forget("s1");
        assertEquals(List.of(), errors.of("s1"));
    }
}
