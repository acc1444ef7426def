package dev.previewtunnel.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine.TypeConversionException;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ConvertersTest {
    private final Converters.DurationConverter durations = new Converters.DurationConverter();

    @Test
    void shortFormsAndIso8601() {
        assertEquals(Duration.ofSeconds(90), durations.convert("90s"));
        assertEquals(Duration.ofMinutes(5), durations.convert("5m"));
        assertEquals(Duration.ofHours(2), durations.convert("2h"));
        assertEquals(Duration.ofDays(1), durations.convert("1d"));
        assertEquals(Duration.ofMinutes(5), durations.convert(" 5m "));
        assertEquals(Duration.ofMinutes(5), durations.convert("PT5M"));
        assertEquals(Duration.ofSeconds(90), durations.convert("PT1M30S"));
        assertEquals(Duration.ofDays(1), durations.convert("P1D"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"5M", "soon", "5", "m", "1w", "-5m", "PTxM", "1.5h", "9999999999s"})
    void badDurationsAreOneReadableLine(String text) {
        TypeConversionException e = assertThrows(TypeConversionException.class, () -> durations.convert(text));
        assertTrue(e.getMessage().contains("use e.g. 90s, 5m, 2h, 1d"), e.getMessage());
        assertEquals(1, e.getMessage().lines().count());
    }

    @Test
    void zeroNegativeAndEmptyAreRefused() {
        assertEquals("duration must be positive: '0s'",
                assertThrows(TypeConversionException.class, () -> durations.convert("0s")).getMessage());
        assertEquals("duration must be positive: 'PT-5M'",
                assertThrows(TypeConversionException.class, () -> durations.convert("PT-5M")).getMessage());
        assertTrue(assertThrows(TypeConversionException.class, () -> durations.convert(" "))
                .getMessage().startsWith("duration is empty"));
        assertThrows(IllegalArgumentException.class, () -> Converters.parseDuration(null));
    }

    @Test
    void longBadValuesAreCutInTheMessage() {
        String message = assertThrows(TypeConversionException.class, () -> durations.convert("x".repeat(100)))
                .getMessage();
        assertTrue(message.contains("x".repeat(32) + "..."), message);
        assertTrue(message.length() < 120, message);
    }

    @Test
    void listenAddressConverterParsesWithoutResolving() {
        Converters.ListenAddressConverter converter = new Converters.ListenAddressConverter();
        assertEquals(new ListenAddress("::1", 0), converter.convert("[::1]:0"));
        assertEquals(new ListenAddress("no.such.host.invalid", 80), converter.convert("no.such.host.invalid:80"));
        TypeConversionException e = assertThrows(TypeConversionException.class, () -> converter.convert("::1:80"));
        assertEquals("must be HOST:PORT (e.g. 127.0.0.1:8080 or [::1]:8080), got '::1:80': missing :PORT "
                + "(IPv6 needs brackets)", e.getMessage());
    }
}
