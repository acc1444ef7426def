package dev.previewtunnel.spikes.e2e;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterTestExecutionCallback;
import org.junit.jupiter.api.extension.BeforeTestExecutionCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns every {@link SpikeRun} method into one JSON result line ({@code {"run":"vite_hmr","ok":true,...}}) on
 * stdout and rewrites {@code target/spike-report.json} with all results of this JVM after each run, so the file
 * exists and is complete even when runs fail (ok:false, with the error) or their class's setup failed.
 */
public final class SpikeReport implements ParameterResolver, BeforeTestExecutionCallback, AfterTestExecutionCallback,
        AfterAllCallback {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(SpikeReport.class);
    private static final Map<String, ObjectNode> RESULTS = new LinkedHashMap<>();
    private static final Map<String, Object> ENVIRONMENT = new LinkedHashMap<>();
    private static final Instant STARTED = Instant.now();

    /** Records a fact about the machine (tool versions) for the report header. */
    public static synchronized void environment(String key, Object value) {
        ENVIRONMENT.put(key, value);
    }

    public static Path reportFile() {
        String base = System.getProperty("basedir", System.getProperty("user.dir"));
        return Path.of(base, "target", "spike-report.json");
    }

    @Override
    public boolean supportsParameter(ParameterContext p, ExtensionContext c) {
        return p.getParameter().getType() == SpikeResult.class;
    }

    @Override
    public Object resolveParameter(ParameterContext p, ExtensionContext c) {
        return c.getStore(NS).getOrComputeIfAbsent("result", k -> new SpikeResult(), SpikeResult.class);
    }

    @Override
    public void beforeTestExecution(ExtensionContext c) {
        c.getStore(NS).put("start", System.nanoTime());
    }

    @Override
    public void afterTestExecution(ExtensionContext c) {
        SpikeRun run = c.getRequiredTestMethod().getAnnotation(SpikeRun.class);
        if (run == null) {
            return;
        }
        SpikeResult result = c.getStore(NS).getOrComputeIfAbsent("result", k -> new SpikeResult(), SpikeResult.class);
        Long start = c.getStore(NS).get("start", Long.class);
        long ms = start == null ? -1 : (System.nanoTime() - start) / 1_000_000;
        record(run.value(), c.getExecutionException().orElse(null), result.snapshot(), ms);
    }

    @Override
    public void afterAll(ExtensionContext c) {
        // A failed @BeforeAll means the runs never executed: they still appear, as failures.
        Throwable classFailure = c.getExecutionException().orElse(null);
        if (classFailure == null) {
            return;
        }
        for (Method m : c.getRequiredTestClass().getDeclaredMethods()) {
            SpikeRun run = m.getAnnotation(SpikeRun.class);
            if (run != null) {
                synchronized (SpikeReport.class) {
                    if (RESULTS.containsKey(run.value())) {
                        continue;
                    }
                }
                record(run.value(), classFailure, SpikeResult.JSON.createObjectNode(), -1);
            }
        }
    }

    static synchronized void record(String name, Throwable failure, ObjectNode measurements, long ms) {
        ObjectNode line = SpikeResult.JSON.createObjectNode();
        line.put("run", name);
        line.put("ok", failure == null);
        if (failure != null) {
            String msg = failure.getClass().getSimpleName() + ": " + failure.getMessage();
            line.put("error", msg.length() > 600 ? msg.substring(0, 600) + "..." : msg);
        }
        line.put("ms", ms);
        line.setAll(measurements);
        RESULTS.put(name, line);
        System.out.println("SPIKE " + line);
        write();
    }

    private static void write() {
        ObjectNode report = SpikeResult.JSON.createObjectNode();
        report.put("generatedAt", Instant.now().toString());
        report.put("startedAt", STARTED.toString());
        report.put("ci", "true".equalsIgnoreCase(System.getenv("CI")));
        report.set("environment", SpikeResult.JSON.valueToTree(ENVIRONMENT));
        List<ObjectNode> runs = new ArrayList<>(RESULTS.values());
        long passed = runs.stream().filter(r -> r.path("ok").asBoolean()).count();
        report.put("passed", passed);
        report.put("failed", runs.size() - passed);
        ArrayNode array = report.putArray("runs");
        runs.forEach(array::add);
        Path file = reportFile();
        try {
            Files.createDirectories(file.getParent());
            Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
            Files.writeString(tmp, SpikeResult.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(report) + "\n",
                    StandardCharsets.UTF_8);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
