package dev.previewtunnel.cli;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Precedence flags > environment > config file > defaults, and every way a value can be wrong. */
class SettingsConfigTest {
    private static final Set<String> KEYS = Set.of("listen", "dial-timeout", "pool", "control",
            "allow-target", "keys", "grant-file", "stream-window", "rate");

    @Command(name = "x")
    static final class X {
    }

    private final CommandSpec spec = new CommandLine(new X()).getCommandSpec();
    private final Map<String, String> env = new HashMap<>();

    @TempDir
    Path tmp;

    @AfterEach
    void restoreEnvironment() {
        Settings.environmentForTests(null);
    }

    private Settings load(Path file) {
        Settings.environmentForTests(env);
        return Settings.load(spec, file, "PTUN_T_", KEYS);
    }

    private Path config(String json) throws Exception {
        return Files.writeString(tmp.resolve("c.json"), json);
    }

    @Test
    void flagsBeatEnvironmentBeatsFileBeatsDefaults() throws Exception {
        Path file = config("{\"listen\":\"127.0.0.1:3\",\"dial-timeout\":\"3s\",\"pool\":3,\"control\":false}");
        env.put("PTUN_T_LISTEN", "127.0.0.1:2");
        env.put("PTUN_T_DIAL_TIMEOUT", "2s");
        Settings s = load(file);
        assertEquals("127.0.0.1:1", s.string("listen", "127.0.0.1:1", "127.0.0.1:0"), "flag first");
        assertEquals("--listen", s.name("listen"));
        assertEquals(Duration.ofSeconds(2), s.duration("dial-timeout", null, Duration.ofSeconds(5)), "then env");
        assertEquals("dial-timeout (from PTUN_T_DIAL_TIMEOUT)", s.name("dial-timeout"));
        assertEquals(3, s.integer("pool", null, 2), "then the file");
        assertEquals("pool (from config file " + file + ")", s.name("pool"));
        assertEquals(false, s.bool("control", null, true), "a JSON boolean");
        assertNull(s.path("keys", null, null), "then the default");
        assertEquals("--keys", s.name("keys"));
        assertEquals(file, s.file());
    }

    @Test
    void anEmptyVariableCountsAsUnsetAndTheConfigFileCanComeFromTheEnvironment() throws Exception {
        Path file = config("{\"listen\":\"127.0.0.1:3\"}");
        env.put("PTUN_T_LISTEN", "");
        env.put("PTUN_T_CONFIG", file.toString());
        Settings s = load(null);
        assertEquals("127.0.0.1:3", s.string("listen", null, null));
    }

    @Test
    void invalidValuesNameTheKeyWhereItCameFromAndWhy() throws Exception {
        env.put("PTUN_T_DIAL_TIMEOUT", "soon");
        Settings s = load(config("{\"pool\":\"two\",\"control\":\"maybe\",\"listen\":[1,2],\"allow-target\":{}}"));
        ParameterException d = assertThrows(ParameterException.class,
                () -> s.duration("dial-timeout", null, Duration.ofSeconds(5)));
        assertEquals("dial-timeout (from PTUN_T_DIAL_TIMEOUT): invalid duration 'soon'; use e.g. 90s, 5m, 2h, 1d or "
                + "ISO-8601 like PT5M", d.getMessage());
        ParameterException p = assertThrows(ParameterException.class, () -> s.integer("pool", null, 2));
        assertTrue(p.getMessage().startsWith("pool (from config file ") && p.getMessage().endsWith(
                "): must be a whole number, got 'two'"), p.getMessage());
        assertTrue(assertThrows(ParameterException.class, () -> s.bool("control", null, true)).getMessage()
                .endsWith("must be true or false, got 'maybe'"));
        assertTrue(assertThrows(ParameterException.class, () -> s.string("listen", null, null)).getMessage()
                .contains("must be a string, a number or true/false, not a JSON array"));
        assertTrue(assertThrows(ParameterException.class, () -> s.list("allow-target", null, Settings::text))
                .getMessage().contains("allow-target (from config file"));
        // A decimal is not silently truncated to a whole number.
        Settings decimal = load(config("{\"pool\":2.5}"));
        assertTrue(assertThrows(ParameterException.class, () -> decimal.integer("pool", null, 2)).getMessage()
                .endsWith("must be a whole number, got '2.5'"));
    }

    @Test
    void unknownKeysAndMalformedFilesFailWithoutQuotingTheContent() throws Exception {
        ParameterException unknown = assertThrows(ParameterException.class, () -> load(config("{\"lisen\":\"x\"}")));
        assertTrue(unknown.getMessage().startsWith("unknown key \"lisen\" in config file"), unknown.getMessage());
        assertTrue(unknown.getMessage().contains("known keys: allow-target, control, dial-timeout"), unknown.getMessage());
        ParameterException secret = assertThrows(ParameterException.class, () -> load(config("{\"token\":\"eyJ.x.y\"}")));
        assertTrue(secret.getMessage().contains("secrets never go in a config file"), secret.getMessage());
        assertFalse(secret.getMessage().contains("eyJ.x.y"));

        ParameterException malformed = assertThrows(ParameterException.class,
                () -> load(config("{\n  \"listen\": \"sekrit-looking-value\n}")));
        assertTrue(malformed.getMessage().matches(".*is not valid JSON \\(line \\d+, column \\d+\\)"),
                malformed.getMessage());
        assertFalse(malformed.getMessage().contains("sekrit"), malformed.getMessage());
        assertTrue(assertThrows(ParameterException.class, () -> load(config("[1]"))).getMessage()
                .contains("must hold one JSON object"));
        assertTrue(assertThrows(ParameterException.class, () -> load(tmp.resolve("missing.json"))).getMessage()
                .contains("does not exist"));
        Path unreadable = config("{}");
        Files.setPosixFilePermissions(unreadable, PosixFilePermissions.fromString("---------"));
        if (!Files.isReadable(unreadable)) { // root reads anything
            CliException e = assertThrows(CliException.class, () -> load(unreadable));
            assertEquals(ExitCodes.REFUSED, e.exitCode());
        }
    }

    @Test
    void listsAndPaths() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("etc"));
        Path file = Files.writeString(dir.resolve("c.json"),
                "{\"allow-target\":[\"10.0.0.0/8\",\"fd12::/16\"],\"keys\":\"keys\",\"grant-file\":[\"g1\",\"/abs/g2\"]}");
        env.put("PTUN_T_ALLOW_TARGET", "192.168.0.0/16, 172.16.0.0/12,");
        Settings s = load(file);
        assertEquals(List.of("192.168.0.0/16", "172.16.0.0/12"), s.list("allow-target", List.of(), Settings::text),
                "env: comma-separated, blanks ignored");
        assertEquals(List.of("a"), s.list("allow-target", List.of("a"), Settings::text), "flags replace, not merge");
        assertEquals(dir.resolve("keys"), s.path("keys", null, null), "relative to the config file's directory");
        assertEquals(Path.of("keys"), s.path("keys", Path.of("keys"), null), "a flag stays as given");
        assertEquals(List.of(dir.resolve("g1"), Path.of("/abs/g2")), s.paths("grant-file", List.of()));
        env.clear();
        assertEquals(List.of("10.0.0.0/8", "fd12::/16"), load(file).list("allow-target", null, Settings::text));
    }

    @Test
    void aMissingRequiredSettingSaysEveryWayToGiveIt() {
        Settings s = load(null);
        ParameterException e = assertThrows(ParameterException.class,
                () -> s.require("listen", "HOST:PORT", s.string("listen", null, null)));
        assertEquals("missing --listen HOST:PORT (or PTUN_T_LISTEN, or \"listen\" in a --config file)", e.getMessage());
        assertEquals("PTUN_T_DIAL_TIMEOUT", s.envName("dial-timeout"));
        assertThrows(IllegalStateException.class, () -> s.string("undeclared", null, null), "a bug, not input");
    }

    @Test
    void sizesRatesAndRangesNameTheKeyAndWhereItCameFrom() throws Exception {
        Path file = config("{\"stream-window\": 65536, \"rate\": 2.5, \"pool\": 70}");
        env.put("PTUN_T_DIAL_TIMEOUT", "2h");
        Settings s = load(file);
        assertEquals(65_536L, s.size("stream-window", null, 1024), "a JSON number is bytes");
        assertEquals(2.5, s.rate("rate", null, 200), 0.0);
        assertEquals(4L << 20, load(file).size("stream-window", 4L << 20, 1024), "the flag wins");
        ParameterException big = assertThrows(ParameterException.class,
                () -> s.inRange("stream-window", 2L << 30, 64 << 10, 1 << 30, true));
        assertEquals("stream-window (from config file " + file + ") must be at most 1GiB, got 2GiB", big.getMessage());
        s.integer("pool", null, 2);
        assertEquals("pool (from config file " + file + ") must be at most 64, got 70", assertThrows(
                ParameterException.class, () -> s.inRange("pool", 70, 1, 64, false)).getMessage());
        assertEquals(5, s.inRange("pool", 5, 1, 64, false), "in range: returned as is");
        Duration d = s.duration("dial-timeout", null, Duration.ofSeconds(5));
        assertEquals("dial-timeout (from PTUN_T_DIAL_TIMEOUT) must be at most 1h, got 2h", assertThrows(
                ParameterException.class, () -> s.inRange("dial-timeout", d, Duration.ofSeconds(1),
                        Duration.ofHours(1))).getMessage());
        Settings bad = load(config("{\"stream-window\": \"64K\"}"));
        assertTrue(assertThrows(ParameterException.class, () -> bad.size("stream-window", null, 1024)).getMessage()
                .startsWith("stream-window (from config file "), "parse errors name the key too");
    }

    @Command(name = "k", mixinStandardHelpOptions = true)
    static final class Keyed {
        @picocli.CommandLine.Option(names = "--config")
        Path config;
        @picocli.CommandLine.Option(names = {"-l", "--listen"})
        String listen;
        @picocli.CommandLine.Option(names = "--no-control")
        Boolean noControl;
        @picocli.CommandLine.Option(names = "--token")
        String token;
        @picocli.CommandLine.ArgGroup(validate = false)
        Nested nested = new Nested();
    }

    static final class Nested {
        @picocli.CommandLine.Option(names = "--stream-window")
        Long streamWindow;
    }

    @Test
    void theKeysAreTheLongOptionNamesWithoutConfigHelpVersionAndTheSecrets() {
        assertEquals(Set.of("listen", "control", "stream-window"), SettingsProvider.keysOf(new Keyed(), "token"));
        assertEquals(Set.of("stream-window"), SettingsProvider.keysOf(new Nested()));
    }
}
