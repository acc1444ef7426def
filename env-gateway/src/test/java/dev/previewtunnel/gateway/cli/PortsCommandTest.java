package dev.previewtunnel.gateway.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.InProcessCli.Result;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;

import static dev.previewtunnel.gateway.cli.CliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PortsCommandTest {
    @Test
    void listsAListenerAsTextAndAsJson() throws Exception {
        try (ServerSocket server = new ServerSocket()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            int port = server.getLocalPort();

            Result text = run("ports");
            assertEquals(0, text.exitCode(), text.err());
            assertTrue(text.out().lines().anyMatch(l -> l.startsWith(port + " ")), text.out());

            Result json = run("ports", "--json");
            assertEquals(0, json.exitCode(), json.err());
            JsonNode ports = new ObjectMapper().readTree(json.out()).get("ports");
            boolean found = false;
            for (JsonNode p : ports) {
                found |= p.get("port").asInt() == port && p.get("addresses").size() > 0;
            }
            assertTrue(found, json.out());
        }
    }
}
