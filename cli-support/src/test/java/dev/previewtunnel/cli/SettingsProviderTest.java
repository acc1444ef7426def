package dev.previewtunnel.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** picocli fills an option not on the command line from the environment, else the config file, origin kept. */
class SettingsProviderTest {
    static final class TestProvider extends SettingsProvider {
        TestProvider() {
            super("PTUN_T_", "token");
        }
    }

    @Command(name = "t", defaultValueProvider = TestProvider.class, mixinStandardHelpOptions = true)
    static final class T {
        @Spec
        CommandSpec spec;
        @Option(names = "--config")
        Path config;
        @Option(names = "--dial-timeout", converter = Converters.DurationConverter.class)
        Duration dialTimeout;
        @Option(names = "--pool")
        Integer pool;
        @Option(names = "--no-control")
        Boolean noControl;
        @Option(names = "--keys")
        Path keys;
        @Option(names = "--token")
        String token;
        @Option(names = "--allow-target")
        List<String> allowTargets = new ArrayList<>();
    }

    @RegisterExtension
    final FakeEnvironment env = new FakeEnvironment();

    @TempDir
    Path tmp;

    private T parse(String... args) {
        T t = new T();
        new CommandLine(t).parseArgs(args);
        return t;
    }

    @Test
    void flagThenVariableThenFileFillTheFieldsAndTheOriginIsKept() throws Exception {
        Path file = Files.writeString(tmp.resolve("c.json"),
                "{\"dial-timeout\":\"3s\",\"pool\":3,\"control\":false,\"keys\":\"k\"}");
        env.put("PTUN_T_POOL", "2");
        env.put("PTUN_T_TOKEN", "never-a-setting");
        T t = parse("--config", file.toString(), "--dial-timeout", "1s");
        assertEquals(Duration.ofSeconds(1), t.dialTimeout, "flag");
        assertEquals(2, t.pool, "variable over file");
        assertEquals(true, t.noControl, "\"control\": false in the file is --no-control");
        assertEquals(tmp.resolve("k").toAbsolutePath(), t.keys.toAbsolutePath(), "relative to the file's directory");
        assertNull(t.token, "a secret is never taken from the environment");
        assertTrue(t.allowTargets.isEmpty(), "repeatable options are left to Settings.list");

        Settings s = SettingsProvider.settings(t.spec, t.config, "PTUN_T_",
                SettingsProvider.keysOf(t.spec, "token"));
        assertEquals(2, s.integer("pool", t.pool, 64));
        assertEquals("pool (from PTUN_T_POOL)", s.name("pool"));
        assertEquals(Duration.ofSeconds(1), s.duration("dial-timeout", t.dialTimeout, Duration.ofSeconds(5)));
        assertEquals("--dial-timeout", s.name("dial-timeout"));
        s.path("keys", t.keys, null);
        assertEquals("keys (from config file " + file + ")", s.name("keys"));
        assertEquals(Set.of("dial-timeout", "pool", "control", "keys", "allow-target"),
                SettingsProvider.keysOf(t.spec, "token"), "no --config, no --token");
    }

    @Test
    void aBadValueIsAUsageErrorNamingWhereItCameFrom() {
        env.put("PTUN_T_DIAL_TIMEOUT", "soon");
        ParameterException e = assertThrows(ParameterException.class, this::parse);
        assertTrue(e.getMessage().startsWith("dial-timeout (from PTUN_T_DIAL_TIMEOUT): "), e.getMessage());
        env.clear();
        env.put("PTUN_T_POOL", "many");
        e = assertThrows(ParameterException.class, this::parse);
        assertEquals("pool (from PTUN_T_POOL): must be a whole number, got 'many'", e.getMessage());
        assertNull(parse("--help").pool, "--help is not stopped by a bad variable");
    }
}
