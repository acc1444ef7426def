package dev.previewtunnel.cli;

import dev.previewtunnel.mux.wire.SettingRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** A model's range refusing an option's value is the usage error naming the option, its origin and the bounds. */
class OptionRangeTest {
    static final class TestProvider extends SettingsProvider {
        TestProvider() {
            super("PTUN_T_");
        }
    }

    @Command(name = "t", defaultValueProvider = TestProvider.class)
    static final class T {
        @Spec
        CommandSpec spec;
        @Option(names = "--window", converter = Converters.SizeConverter.class)
        Long window;
        @Option(names = "--count")
        Integer count;
        @Option(names = "--wait", converter = Converters.DurationConverter.class)
        Duration waitFor;
    }

    private static final SettingRange<Long> WINDOW = new SettingRange<>("window", 64L << 10, 1L << 30);
    private static final SettingRange<Integer> COUNT = new SettingRange<>("count", 1, 10_000);
    private static final SettingRange<Duration> WAIT =
            new SettingRange<>("wait", Duration.ofSeconds(1), Duration.ofMinutes(10));

    @RegisterExtension
    final FakeEnvironment env = new FakeEnvironment();

    private static Settings settingsOf(T t) {
        return SettingsProvider.settings(t.spec, null, "PTUN_T_", SettingsProvider.keysOf(t.spec));
    }

    private static T parse(String... args) {
        T t = new T();
        new CommandLine(t).parseArgs(args);
        return t;
    }

    @Test
    void aValueWithinTheRangeIsReturned() {
        T t = parse("--window", "1MiB", "--count", "64", "--wait", "5s");
        Settings s = settingsOf(t);
        assertEquals(1L << 20, OptionRange.check(s, "window", WINDOW, t.window));
        assertEquals(64, OptionRange.check(s, "count", COUNT, t.count));
        assertEquals(Duration.ofSeconds(5), OptionRange.check(s, "wait", WAIT, t.waitFor));
    }

    @Test
    void aValueOutsideNamesTheFlagAndShowsTheBoundsInTheOptionsUnits() {
        T t = parse("--window", "2GiB", "--count", "0", "--wait", "2h");
        Settings s = settingsOf(t);
        assertEquals("--window must be at most 1GiB, got 2GiB",
                assertThrows(ParameterException.class, () -> OptionRange.check(s, "window", WINDOW, t.window))
                        .getMessage());
        assertEquals("--count must be at least 1, got 0",
                assertThrows(ParameterException.class, () -> OptionRange.check(s, "count", COUNT, t.count))
                        .getMessage());
        assertEquals("--wait must be at most 10m, got 2h",
                assertThrows(ParameterException.class, () -> OptionRange.check(s, "wait", WAIT, t.waitFor))
                        .getMessage());
    }

    @Test
    void aValueFromTheEnvironmentNamesTheVariable() {
        env.put("PTUN_T_WINDOW", "32KiB");
        T t = parse();
        Settings s = settingsOf(t);
        assertEquals("window (from PTUN_T_WINDOW) must be at least 64KiB, got 32KiB",
                assertThrows(ParameterException.class, () -> OptionRange.check(s, "window", WINDOW, t.window))
                        .getMessage());
    }
}
