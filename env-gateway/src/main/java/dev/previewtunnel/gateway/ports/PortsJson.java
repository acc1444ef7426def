package dev.previewtunnel.gateway.ports;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;

/**
 * The JSON form of the listeners, {@code "ports":[{"port":5173,"addresses":["127.0.0.1"]}]}, shared by
 * {@code ports --json} and the stdio control channel's {@code ports} op so that both print the same objects.
 */
public final class PortsJson {
    private PortsJson() {
    }

    /** Adds {@code "ports":[...]} to {@code out} and returns it. */
    public static ObjectNode putPorts(ObjectNode out, List<LoopbackListeners.Port> ports) {
        ArrayNode list = out.putArray("ports");
        for (LoopbackListeners.Port p : ports) {
            ObjectNode entry = list.addObject().put("port", p.port());
            p.addresses().forEach(entry.putArray("addresses")::add);
        }
        return out;
    }
}
