package dev.previewtunnel.gateway.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.gateway.policy.Cidr;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** {@code 10.1.2.0/24}, {@code fd12::/16}; a bad value is reported as one readable line. */
final class CidrConverter implements ITypeConverter<Cidr> {
    @Override
    public Cidr convert(String value) {
        try {
            return parse(value);
        } catch (IllegalArgumentException e) {
            throw new TypeConversionException(e.getMessage());
        }
    }

    /** For values from the environment or the config file: IllegalArgumentException with the reason. */
    static Cidr parse(String value) {
        try {
            return Cidr.parse(value);
        } catch (RuntimeException e) { // IllegalArgumentException, NumberFormatException for the prefix
            throw new IllegalArgumentException("not a CIDR like 10.1.2.0/24 or fd12::/16: '" + Cli.shown(value) + "'");
        }
    }
}
