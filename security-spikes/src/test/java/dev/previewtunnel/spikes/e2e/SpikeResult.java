package dev.previewtunnel.spikes.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** The measurements one run reports (injected into the test method; the extension adds run, ok, error, ms). */
public final class SpikeResult {
    static final ObjectMapper JSON = new ObjectMapper();

    private final ObjectNode measurements = JSON.createObjectNode();

    public synchronized SpikeResult put(String key, Object value) {
        measurements.set(key, JSON.valueToTree(value));
        return this;
    }

    public synchronized ObjectNode snapshot() {
        return measurements.deepCopy();
    }

    public synchronized JsonNode get(String key) {
        return measurements.get(key);
    }
}
