package dev.previewtunnel.cli;

import picocli.CommandLine.IDefaultValueProvider;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

import java.nio.file.Path;
import java.util.Set;

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
        return s.provide(key, option, negated);
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
        return Settings.keysOf(spec, notSettings);
    }
}
