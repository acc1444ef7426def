package dev.previewtunnel.spikes.e2e;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a test method as one spike run: its result line goes to stdout and to target/spike-report.json. The class
 * carries {@code @ExtendWith(SpikeReport.class)}.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
public @interface SpikeRun {
    /** The run's name in the report, e.g. {@code vite_hmr}. */
    String value();
}
