package dev.previewtunnel.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ParseDurationTest {

    @Test
    void acceptsShortForms() {
        assertEquals(Duration.ofSeconds(90), Converters.parseDuration("90s"));
        assertEquals(Duration.ofMinutes(5), Converters.parseDuration("5m"));
        assertEquals(Duration.ofHours(2), Converters.parseDuration("2h"));
        assertEquals(Duration.ofDays(1), Converters.parseDuration("1d"));
        assertEquals(Duration.ofMinutes(5), Converters.parseDuration(" 5m "));
    }

    @Test
    void acceptsIso8601() {
        assertEquals(Duration.ofMinutes(5), Converters.parseDuration("PT5M"));
        assertEquals(Duration.ofSeconds(90), Converters.parseDuration("PT1M30S"));
        assertEquals(Duration.ofDays(1), Converters.parseDuration("P1D"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "5", "5x", "m5", "-5m", "5 m", "5M", "1.5h", "PT-5M", "0s", "PT0S", "P", "abc",
            "99999999999s"})
    void refusesEverythingElse(String text) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Converters.parseDuration(text));
        assertTrue(e.getMessage().contains("duration"), e.getMessage());
    }

    @Test
    void refusesNull() {
        assertThrows(IllegalArgumentException.class, () -> Converters.parseDuration(null));
    }
}
