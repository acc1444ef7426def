package dev.previewtunnel.cli;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.json.JsonTrees;
import picocli.CommandLine.Model.CommandSpec;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * The settings of a long-running command, each taken from the first place that has it:
 *
 * <ol>
 *   <li>the command-line flag ({@code --dial-timeout 5s});</li>
 *   <li>the environment variable: prefix + the key in upper case with {@code -} as {@code _}
 *       ({@code PTUN_GATEWAY_DIAL_TIMEOUT=5s}); an empty variable counts as unset;</li>
 *   <li>the JSON config file ({@code --config FILE}, else the file named by {@code <PREFIX>CONFIG}): an object
 *       whose keys are the long option names without {@code --} ({@code {"dial-timeout":"5s"}}); relative
 *       paths in it are relative to the file's directory;</li>
 *   <li>the built-in default.</li>
 * </ol>
 *
 * An invalid value is a usage error (exit 1) naming the key and where it came from
 * ({@code dial-timeout (from PTUN_GATEWAY_DIAL_TIMEOUT): invalid duration 'soon'; ...}); a value is never
 * clamped or silently replaced. An unknown key in the file is an error too (a typo must not go unnoticed).
 * Secrets are never settings: the file and the environment hold the paths of token files, never tokens.
 */
public final class Settings {
    private static volatile Function<String, String> environment = System::getenv;

    private final CommandSpec spec;
    private final String envPrefix;
    private final Path file;
    private final ObjectNode values;
    private final Set<String> keys;
    private final Map<String, String> origins = new HashMap<>();

    private Settings(CommandSpec spec, String envPrefix, Path file, ObjectNode values, Set<String> keys) {
        this.spec = spec;
        this.envPrefix = envPrefix;
        this.file = file;
        this.values = values;
        this.keys = keys;
    }

    /**
     * Replaces the process environment as seen by every {@link Settings} (tests); null restores it.
     */
    public static void environmentForTests(Map<String, String> env) {
        environment = env == null ? System::getenv : env::get;
    }

    /**
     * Reads the config file, if any: {@code configFlag}, else the file named by {@code envPrefix + "CONFIG"}.
     *
     * @param keys every key the command knows (its long option names without {@code --})
     * @throws RuntimeException a usage error (exit 1) for a missing or malformed file or an unknown key; a
     *                          {@link CliException} with exit 3 for an unreadable one
     */
    public static Settings load(CommandSpec spec, Path configFlag, String envPrefix, Set<String> keys) {
        Path file = configFlag;
        String fileOrigin = "--config";
        if (file == null) {
            String fromEnv = env(envPrefix + "CONFIG");
            if (fromEnv != null) {
                try {
                    file = Path.of(fromEnv);
                } catch (InvalidPathException e) {
                    throw Cli.usage(spec, envPrefix + "CONFIG is not a valid path: '" + Cli.shown(fromEnv) + "'");
                }
                fileOrigin = envPrefix + "CONFIG";
            }
        }
        ObjectNode values = JsonTrees.object();
        if (file != null) {
            values = read(spec, file, fileOrigin);
            Set<String> unknown = new TreeSet<>();
            for (Iterator<String> it = values.fieldNames(); it.hasNext(); ) {
                String k = it.next();
                if (!keys.contains(k)) {
                    unknown.add(k);
                }
            }
            if (!unknown.isEmpty()) {
                String first = unknown.iterator().next();
                throw Cli.usage(spec, "unknown key \"" + Cli.shown(first) + "\" in config file " + file
                        + (first.equals("token") || first.equals("grant") || first.endsWith("password")
                        ? " (secrets never go in a config file: name a file holding them, e.g. \"token-file\")"
                        : "") + "; known keys: " + String.join(", ", new TreeSet<>(keys)));
            }
        }
        return new Settings(spec, envPrefix, file, values, Set.copyOf(keys));
    }

    private static ObjectNode read(CommandSpec spec, Path file, String origin) {
        if (!Files.isRegularFile(file)) {
            throw Cli.usage(spec, origin + " file " + file + " does not exist or is not a file");
        }
        JsonNode root;
        try {
            if (Files.size(file) > 1024 * 1024) {
                throw Cli.usage(spec, "config file " + file + " is larger than 1 MiB");
            }
            root = JsonTrees.parse(Files.readString(file));
        } catch (AccessDeniedException e) {
            throw new CliException(ExitCodes.REFUSED, "config file " + file + " is not readable (permission denied)");
        } catch (JsonProcessingException e) {
            // Only the position: Jackson's message quotes the file's content.
            JsonLocation at = e.getLocation();
            throw Cli.usage(spec, "config file " + file + " is not valid JSON"
                    + (at == null ? "" : " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")"));
        } catch (IOException e) {
            throw new CliException(ExitCodes.REFUSED, "cannot read config file " + file + " ("
                    + e.getClass().getSimpleName() + ")");
        }
        if (root == null || !root.isObject()) {
            throw Cli.usage(spec, "config file " + file + " must hold one JSON object, e.g. "
                    + "{\"listen\": \"127.0.0.1:7443\"}");
        }
        return (ObjectNode) root;
    }

    private static String env(String name) {
        String v = environment.apply(name);
        return v == null || v.isEmpty() ? null : v;
    }

    CommandSpec spec() {
        return spec;
    }

    Set<String> keys() {
        return keys;
    }

    boolean declared(String key) {
        return keys.contains(key);
    }

    /**
     * The text picocli converts for the option of {@code key} when it is not on the command line: the
     * environment variable, else the config file, else null; checked with {@code parser} (the option's converter)
     * so that a bad value is reported with its origin. A path from the file comes resolved against the
     * file's directory; {@code negated} ({@code --no-X} for key X) inverts a true/false value.
     */
    String provide(String key, Function<String, ?> parser, boolean negated) {
        String text = env(envName(key));
        String origin = key + " (from " + envName(key) + ")";
        if (text == null) {
            JsonNode node = values.get(key);
            if (node == null || node.isNull()) {
                return null;
            }
            origin = key + " (from config file " + file + ")";
            origins.put(key, origin);
            if (!node.isValueNode()) {
                throw invalid(key, "must be a string, a number or true/false, not a JSON "
                        + (node.isArray() ? "array" : "object"));
            }
            text = node.asText();
        }
        origins.put(key, origin);
        Object value = parse(key, text, parser);
        if (value instanceof Boolean b) {
            return Boolean.toString(negated != b);
        }
        if (value instanceof Path p) {
            return fromConfigDir(key, p).toString();
        }
        return text.strip();
    }

    /** The config file in use, or null. */
    public Path file() {
        return file;
    }

    /** {@code PTUN_GATEWAY_DIAL_TIMEOUT} for {@code dial-timeout}. */
    public String envName(String key) {
        return envPrefix + key.toUpperCase(Locale.ROOT).replace('-', '_');
    }

    /**
     * {@code text}, the value of {@code key}, as a loopback HOST:PORT (see {@link Cli#parseListen}); anything else
     * is invalid: the address is for local tools only.
     */
    public java.net.InetSocketAddress loopbackListen(CommandSpec spec, String key, String text, int examplePort) {
        java.net.InetSocketAddress address = Cli.parseListen(spec, name(key), text, examplePort);
        if (!address.getAddress().isLoopbackAddress()) {
            throw invalid(key, "must be a loopback address (127.0.0.0/8 or [::1]), got '" + Cli.shown(text)
                    + "': it is for local tools only");
        }
        return address;
    }

    /**
     * How messages name a setting: {@code --listen} when it came from the flag (or the default),
     * {@code listen (from PTUN_GATEWAY_LISTEN)}, or {@code listen (from config file F)}.
     */
    public String name(String key) {
        return origins.getOrDefault(key, "--" + key);
    }

    /** A usage error (exit 1) about a setting: {@code <name>: <reason>} or {@code <name> <reason>}. */
    public RuntimeException invalid(String key, String reason) {
        return Cli.usage(spec, name(key) + (reason.startsWith("must") ? " " : ": ") + reason);
    }

    /**
     * {@code value} when not null, else a usage error that says every way to give it:
     * {@code missing --listen HOST:PORT (or PTUN_GATEWAY_LISTEN, or "listen" in a --config file)}.
     */
    public <T> T require(String key, String label, T value) {
        if (value == null) {
            throw Cli.usage(spec, "missing --" + key + " " + label + " (or " + envName(key) + ", or \"" + key
                    + "\" in a --config file)");
        }
        return value;
    }

    /**
     * The value of {@code key}: {@code flag} when given (not null), else the environment, else the file, else
     * {@code def}.
     *
     * @param parser turns the text of an environment variable or a file value into a value; throws
     *               IllegalArgumentException with the reason
     */
    public <T> T get(String key, T flag, Function<String, T> parser, T def) {
        requireKnown(key);
        if (flag != null) {
            origins.putIfAbsent(key, "--" + key); // a value picocli took from the environment or file keeps its origin
            return flag;
        }
        String fromEnv = env(envName(key));
        if (fromEnv != null) {
            origins.put(key, key + " (from " + envName(key) + ")");
            return parse(key, fromEnv, parser);
        }
        JsonNode node = values.get(key);
        if (node != null && !node.isNull()) {
            origins.put(key, key + " (from config file " + file + ")");
            if (!node.isValueNode()) {
                throw invalid(key, "must be a string, a number or true/false, not a JSON "
                        + (node.isArray() ? "array" : "object"));
            }
            return parse(key, node.asText(), parser);
        }
        origins.put(key, "--" + key);
        return def;
    }

    /**
     * A repeatable setting: the flags when any were given, else the environment variable (comma-separated),
     * else the file (a JSON array, or one value), else empty.
     */
    public <T> List<T> list(String key, List<T> flags, Function<String, T> parser) {
        requireKnown(key);
        if (flags != null && !flags.isEmpty()) {
            origins.put(key, "--" + key);
            return List.copyOf(flags);
        }
        List<T> out = new ArrayList<>();
        String fromEnv = env(envName(key));
        if (fromEnv != null) {
            origins.put(key, key + " (from " + envName(key) + ")");
            for (String part : fromEnv.split(",")) {
                if (!part.isBlank()) {
                    out.add(parse(key, part, parser));
                }
            }
            return out;
        }
        JsonNode node = values.get(key);
        if (node != null && !node.isNull()) {
            origins.put(key, key + " (from config file " + file + ")");
            if (node.isArray()) {
                for (JsonNode item : node) {
                    if (!item.isValueNode() || item.isNull()) {
                        throw invalid(key, "must be an array of strings");
                    }
                    out.add(parse(key, item.asText(), parser));
                }
            } else if (node.isValueNode()) {
                out.add(parse(key, node.asText(), parser));
            } else {
                throw invalid(key, "must be an array of strings");
            }
            return out;
        }
        origins.put(key, "--" + key);
        return out;
    }

    public String string(String key, String flag, String def) {
        return get(key, flag, Settings::text, def);
    }

    public Duration duration(String key, Duration flag, Duration def) {
        return get(key, flag, Converters::parseDuration, def);
    }

    public Integer integer(String key, Integer flag, Integer def) {
        return get(key, flag, Settings::wholeNumber, def);
    }

    /** A byte count ({@code 65536}, {@code 64KiB}, {@code 1MiB}); see {@link Converters#parseSize}. */
    public long size(String key, Long flag, long def) {
        return get(key, flag, Converters::parseSize, def);
    }

    /** A positive decimal number ({@code 200}, {@code 0.5}); see {@link Converters#parseRate}. */
    public double rate(String key, Double flag, double def) {
        return get(key, flag, Converters::parseRate, def);
    }

    /**
     * {@code value} when within [min, max], else a usage error that states the whole range, for small counts
     * (connections, threads): {@code pool (from PTUN_INGRESS_POOL) must be 1 to 64, got 100}.
     */
    public int count(String key, int value, int min, int max) {
        if (value < min || value > max) {
            throw invalid(key, "must be " + min + " to " + max + ", got " + value);
        }
        return value;
    }

    /**
     * {@code value} when within [min, max], else a usage error naming the setting and where it came from:
     * {@code max-frame-size (from PTUN_GATEWAY_MAX_FRAME_SIZE) must be at most 16MiB, got 32MiB}.
     *
     * @param bytes true to show the bounds as sizes (64KiB), false as plain numbers
     */
    public long inRange(String key, long value, long min, long max, boolean bytes) {
        if (value < min || value > max) {
            java.util.function.LongFunction<String> shown = bytes ? Converters::humanSize : Long::toString;
            throw invalid(key, "must be " + (value < min ? "at least " + shown.apply(min)
                    : "at most " + shown.apply(max)) + ", got " + shown.apply(value));
        }
        return value;
    }

    /** Like {@link #inRange(String, long, long, long, boolean)} for a duration. */
    public Duration inRange(String key, Duration value, Duration min, Duration max) {
        return Cli.requireRange(spec, value, name(key), min, max);
    }

    public Boolean bool(String key, Boolean flag, Boolean def) {
        return get(key, flag, Settings::trueOrFalse, def);
    }

    /** A path; one from the config file is relative to the file's directory. */
    public Path path(String key, Path flag, Path def) {
        Path p = get(key, flag, Settings::toPath, def);
        return flag == null ? fromConfigDir(key, p) : p;
    }

    /** Like {@link #list} for paths; paths from the config file are relative to the file's directory. */
    public List<Path> paths(String key, List<Path> flags) {
        List<Path> list = list(key, flags, Settings::toPath);
        if (flags != null && !flags.isEmpty()) {
            return list;
        }
        List<Path> resolved = new ArrayList<>();
        for (Path p : list) {
            resolved.add(fromConfigDir(key, p));
        }
        return resolved;
    }

    /**
     * {@code p}, a path read for {@code key} (once read, so that where it came from is known): when the value
     * came from the config file and {@code p} is relative, resolved against the file's directory.
     */
    public Path fromConfigDir(String key, Path p) {
        if (p == null || p.isAbsolute() || file == null || !name(key).contains("config file")) {
            return p;
        }
        Path dir = file.toAbsolutePath().getParent();
        return dir == null ? p : dir.resolve(p);
    }

    private <T> T parse(String key, String text, Function<String, T> parser) {
        try {
            return parser.apply(text.strip());
        } catch (IllegalArgumentException e) {
            throw Cli.usage(spec, name(key) + ": " + e.getMessage());
        }
    }

    private void requireKnown(String key) {
        if (!keys.contains(key)) {
            throw new IllegalStateException("setting '" + key + "' is not declared"); // a bug, not a user error
        }
    }

    /** One line of text without control characters. */
    public static String text(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (Character.isISOControl(s.charAt(i))) {
                throw new IllegalArgumentException("must not contain control characters");
            }
        }
        return s;
    }

    public static Integer wholeNumber(String s) {
        try {
            return Integer.valueOf(s.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("must be a whole number, got '" + Cli.shown(s) + "'");
        }
    }

    public static Boolean trueOrFalse(String s) {
        return switch (s.strip().toLowerCase(Locale.ROOT)) {
            case "true", "yes", "on", "1" -> true;
            case "false", "no", "off", "0" -> false;
            default -> throw new IllegalArgumentException("must be true or false, got '" + Cli.shown(s) + "'");
        };
    }

    public static Path toPath(String s) {
        if (s.isBlank()) {
            throw new IllegalArgumentException("must not be empty");
        }
        try {
            return Path.of(text(s));
        } catch (InvalidPathException e) {
            throw new IllegalArgumentException("is not a valid path: '" + Cli.shown(s) + "'");
        }
    }
}
