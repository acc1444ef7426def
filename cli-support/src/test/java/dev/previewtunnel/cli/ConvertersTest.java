package dev.previewtunnel.cli;

import dev.previewtunnel.local.net.ListenAddress;
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

    @Test
    void sizesInBytesOrBinaryUnitsRoundTrip() {
        Converters.SizeConverter sizes = new Converters.SizeConverter();
        assertEquals(65_536L, sizes.convert("65536"));
        assertEquals(65_536L, sizes.convert("64KiB"));
        assertEquals(65_536L, sizes.convert(" 64 KiB "));
        assertEquals(1L << 20, sizes.convert("1MiB"));
        assertEquals(3L << 30, sizes.convert("3GiB"));
        assertEquals(100L, sizes.convert("100B"));
        for (long n : new long[]{1, 1000, 1024, 16_777_215, 1L << 20, 3L << 30, 5L << 10}) {
            assertEquals(n, Converters.parseSize(Converters.humanSize(n)), () -> "round trip of " + n);
        }
        assertEquals("256KiB", Converters.humanSize(256 * 1024));
        assertEquals("16777215", Converters.humanSize(16_777_215));
    }

    @ParameterizedTest
    @ValueSource(strings = {"64K", "64KB", "1MB", "1mb", "1.5MiB", "-1", "KiB", "", "lots", "99999999999999MiB"})
    void ambiguousOrMalformedSizesAreRefusedWithTheReason(String text) {
        TypeConversionException e = assertThrows(TypeConversionException.class,
                () -> new Converters.SizeConverter().convert(text));
        assertTrue(e.getMessage().contains("use bytes or KiB/MiB/GiB") || e.getMessage().contains("too large"),
                e.getMessage());
        assertEquals(1, e.getMessage().lines().count());
    }

    @Test
    void zeroSizeIsRefused() {
        assertEquals("size must be positive: '0KiB'",
                assertThrows(IllegalArgumentException.class, () -> Converters.parseSize("0KiB")).getMessage());
    }

    @Test
    void ratesArePositiveDecimals() {
        Converters.RateConverter rates = new Converters.RateConverter();
        assertEquals(200.0, rates.convert("200"));
        assertEquals(0.5, rates.convert("0.5"));
        for (String bad : new String[]{"0", "0.0", "-1", "NaN", "Infinity", "1e3", "", "2.5.1"}) {
            TypeConversionException e = assertThrows(TypeConversionException.class, () -> rates.convert(bad), bad);
            assertTrue(e.getMessage().startsWith("must be"), e.getMessage());
        }
    }
}
