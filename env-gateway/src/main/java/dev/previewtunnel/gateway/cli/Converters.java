package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.gateway.policy.Cidr;
import dev.previewtunnel.grants.Durations;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

import java.time.Duration;

/** picocli converters that report bad values as one readable line. */
final class Converters {
    private Converters() {
    }

    /** "90s", "5m", "2h", "1d" or ISO-8601 ("PT5M"); see {@link Durations}. */
    static final class DurationConverter implements ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            try {
                return Durations.parse(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    /** {@code 10.1.2.0/24}, {@code fd12::/16}. */
    static final class CidrConverter implements ITypeConverter<Cidr> {
        @Override
        public Cidr convert(String value) {
            try {
                return Cidr.parse(value);
            } catch (RuntimeException e) { // IllegalArgumentException, NumberFormatException for the prefix
                throw new TypeConversionException("not a CIDR like 10.1.2.0/24 or fd12::/16: '"
                        + Cli.shown(value) + "'");
            }
        }
    }
}
