package dev.previewtunnel.cli;

import picocli.CommandLine.IDefaultValueProvider;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * picocli's default values of a long-running command's options: for an option not given on the command line,
 * its {@code PREFIX_*} environment variable, else its key in the config file ({@link Settings}: keys derived from
 * the options, file and origin kept). The value is checked here, so a bad one is a usage error naming where it
 * came from ({@code dial-timeout (from PTUN_GATEWAY_DIAL_TIMEOUT): ...}); {@link Settings#load} then reports that
 * origin in later messages. Repeatable options are left to {@link Settings#list}: picocli would take a default as
 * one element.
 *
 * <p>Each program names it with a subclass ({@code @Command(defaultValueProvider = ...)}) giving its prefix and
 * the options that are never settings (secrets given on the command line).
 */
public abstract class SettingsProvider implements IDefaultValueProvider {
    private final String envPrefix;
    private final String[] notSettings;
    private Settings settings; // loaded at the first option asked for, from the command's --config

    protected SettingsProvider(String envPrefix, String... notSettings) {
        this.envPrefix = envPrefix;
        this.notSettings = notSettings.clone();
    }

    @Override
    public String defaultValue(ArgSpec arg) {
        if (!(arg instanceof OptionSpec option) || option.isMultiValue() || option.usageHelp()
                || option.versionHelp() || !option.longestName().startsWith("--")
                || option.longestName().equals("--config")) {
            return null;
        }
        String name = option.longestName();
        boolean negated = name.startsWith("--no-");
        String key = negated ? name.substring(5) : name.substring(2);
        if (helpRequested(option.command())) {
            return null; // --help and --version work whatever the environment and the file hold
        }
        Settings s = settings(option.command());
        if (!s.declared(key)) {
            return null;
        }
        return s.provide(key, parserFor(option), negated);
    }

    /**
     * The settings of a command: those its provider loaded while picocli parsed (the file and the origins of the
     * values taken from it or the environment), else {@link Settings#load} with the same arguments.
     */
    public static Settings settings(CommandSpec spec, Path configFlag, String envPrefix, Set<String> keys) {
        if (spec != null && spec.defaultValueProvider() instanceof SettingsProvider provider
                && provider.settings != null && provider.settings.spec() == spec
                && provider.settings.keys().equals(keys)) {
            return provider.settings;
        }
        return Settings.load(spec, configFlag, envPrefix, keys);
    }

    private static boolean helpRequested(CommandSpec spec) {
        for (OptionSpec o : spec.options()) {
            if ((o.usageHelp() || o.versionHelp()) && Boolean.TRUE.equals(o.getValue())) {
                return true;
            }
        }
        return false;
    }

    private Settings settings(CommandSpec spec) {
        if (settings == null || settings.spec() != spec) {
            OptionSpec config = spec.findOption("--config");
            Path file = config == null ? null : config.getValue();
            settings = Settings.load(spec, file, envPrefix, keys(spec));
        }
        return settings;
    }

    private Set<String> keys(CommandSpec spec) {
        // From the spec itself: building a spec from the command object again would re-inject its @Spec field.
        return keysOf(spec, notSettings);
    }

    /**
     * The keys of a command's settings, derived from its options: each long option name without {@code --}
     * ({@code --no-X} gives {@code X}, set to false by the flag), nested option groups included; never
     * {@code --config}, {@code --help}, {@code --version}, nor the options named in {@code notSettings} (secrets
     * given on the command line are never settings: only the files holding them are).
     *
     * @param options an object with picocli {@code @Option}/{@code @ArgGroup} fields (a command or an options class)
     */
    public static Set<String> keysOf(Object options, String... notSettings) {
        return keysOf(CommandSpec.forAnnotatedObject(options), notSettings);
    }

    /** Like {@link #keysOf(Object, String...)} for a command's spec. */
    public static Set<String> keysOf(CommandSpec spec, String... notSettings) {
        Set<String> skipped = Set.of(notSettings);
        Set<String> all = new TreeSet<>();
        for (OptionSpec option : spec.options()) {
            String name = option.longestName();
            if (!name.startsWith("--") || option.usageHelp() || option.versionHelp() || name.equals("--config")) {
                continue;
            }
            String key = name.startsWith("--no-") ? name.substring(5) : name.substring(2);
            if (!skipped.contains(key)) {
                all.add(key);
            }
        }
        return Set.copyOf(all);
    }

    /** The option's converter, else the parser of its type, as {@link Settings} applies it. */
    private static Function<String, ?> parserFor(OptionSpec option) {
        ITypeConverter<?>[] converters = option.converters();
        if (converters != null && converters.length > 0) {
            ITypeConverter<?> converter = converters[0];
            return text -> {
                try {
                    return converter.convert(text);
                } catch (IllegalArgumentException e) {
                    throw e;
                } catch (Exception e) {
                    throw new IllegalArgumentException(e.getMessage());
                }
            };
        }
        Class<?> type = option.type();
        if (type == Integer.class || type == int.class) {
            return Settings::wholeNumber;
        }
        if (type == Boolean.class || type == boolean.class) {
            return Settings::trueOrFalse;
        }
        if (type == Path.class) {
            return Settings::toPath;
        }
        return Settings::text;
    }
}
