package dev.previewtunnel.mux.local;

import java.util.Map;

/**
 * Netty system properties the programs set at the top of their mains, before any Netty class initialises (Netty
 * reads them once, in static initialisers), and only where the user did not set them on the command line.
 *
 * <p>{@code io.netty.jfr.enabled=false}: Netty 4.2's adaptive allocator registers its allocation events with Java
 * Flight Recorder when the JVM has it, which loads ~85 {@code jdk.jfr} classes and JFR's metadata into every idle
 * process: 1.5-1.8 MiB of idle RSS on each side, for events nobody records (docs/performance.md, finding 37). Pass
 * {@code -Dio.netty.jfr.enabled=true} to record them.
 */
public final class NettyDefaults {
    /** Property and value, each set unless already present. */
    public static final Map<String, String> PROPERTIES = Map.of("io.netty.jfr.enabled", "false");

    private NettyDefaults() {
    }

    /** Sets each of {@link #PROPERTIES} the user did not set; call it first in a main, before Netty is touched. */
    public static void apply() {
        PROPERTIES.forEach((name, value) -> {
            if (System.getProperty(name) == null) {
                System.setProperty(name, value);
            }
        });
    }
}
