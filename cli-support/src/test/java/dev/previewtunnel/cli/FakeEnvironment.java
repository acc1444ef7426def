package dev.previewtunnel.cli;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.HashMap;
import java.util.Map;

/**
 * The process environment as {@link Settings} sees it, replaced for each test by a map the test fills
 * ({@code PTUN_GATEWAY_*} variables) and restored afterwards. Use as
 * {@code @RegisterExtension final FakeEnvironment env = new FakeEnvironment();}.
 */
public final class FakeEnvironment implements BeforeEachCallback, AfterEachCallback {
    private final Map<String, String> variables = new HashMap<>();

    @Override
    public void beforeEach(ExtensionContext context) {
        variables.clear();
        Settings.environmentForTests(variables);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        Settings.environmentForTests(null);
    }

    public FakeEnvironment put(String name, String value) {
        variables.put(name, value);
        return this;
    }

    public void clear() {
        variables.clear();
    }
}
