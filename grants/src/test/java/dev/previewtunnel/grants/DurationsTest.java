package dev.previewtunnel.grants;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DurationsTest {

    @Test
    void acceptsShortForms() {
        assertEquals(Duration.ofSeconds(90), Durations.parse("90s"));
        assertEquals(Duration.ofMinutes(5), Durations.parse("5m"));
        assertEquals(Duration.ofHours(2), Durations.parse("2h"));
        assertEquals(Duration.ofDays(1), Durations.parse("1d"));
        assertEquals(Duration.ofMinutes(5), Durations.parse(" 5m "));
    }

    @Test
    void acceptsIso8601() {
        assertEquals(Duration.ofMinutes(5), Durations.parse("PT5M"));
        assertEquals(Duration.ofSeconds(90), Durations.parse("PT1M30S"));
        assertEquals(Duration.ofDays(1), Durations.parse("P1D"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "5", "5x", "m5", "-5m", "5 m", "5M", "1.5h", "PT-5M", "0s", "PT0S", "P", "abc",
            "99999999999s"})
    void refusesEverythingElse(String text) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Durations.parse(text));
        assertTrue(e.getMessage().contains("duration"), e.getMessage());
    }

    @Test
    void refusesNull() {
        assertThrows(IllegalArgumentException.class, () -> Durations.parse(null));
    }
}
