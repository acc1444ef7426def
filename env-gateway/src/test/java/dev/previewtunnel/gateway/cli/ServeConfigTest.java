package dev.previewtunnel.gateway.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.FakeEnvironment;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.gateway.cli.CliHarness.RunningServe;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;

import static dev.previewtunnel.gateway.cli.CliHarness.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code serve} from a JSON config file and PTUN_GATEWAY_* variables, with flags overriding both. */
class ServeConfigTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;
    @RegisterExtension
    final FakeEnvironment env = new FakeEnvironment();

    @BeforeEach
    void keys() {
        assertEquals(0, run("keys", "init", "--dir", tmp.resolve("keys").toString()).exitCode());
    }

    @Test
    void configFileEnvironmentAndFlagsInThatOrder() throws Exception {
        // Relative paths in the file are relative to the file: "keys" is tmp/keys.
        Path config = Files.writeString(tmp.resolve("gateway.json"), """
                {"keys": "keys", "env": "from-file", "listen": "127.0.0.1:0", "path": "/from-file",
                 "drain-timeout": "1s", "metrics-listen": "127.0.0.1:0"}
                """);
        env.put("PTUN_GATEWAY_PATH", "/from-env");
        env.put("PTUN_GATEWAY_ENV", "from-env");
        RunningServe serve = RunningServe.start("serve", "--config", config.toString(), "--env", "from-flag");
        try {
            assertNotNull(serve.command.server(), serve.captured::err);
            JsonNode ready = JSON.readTree(serve.captured.out());
            assertEquals("from-flag", ready.get("env").asText(), "flag over env over file");
            assertTrue(ready.get("url").asText().endsWith("/from-env"), "env over file: " + ready);
            String metrics = ready.get("metrics").asText();
            HttpResponse<String> scrape = HttpClient.newHttpClient().send(
                    HttpRequest.newBuilder(URI.create(metrics)).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, scrape.statusCode());
            assertTrue(scrape.body().contains("ptun_gateway_connections "), scrape.body());
        } finally {
            serve.close();
        }
        assertEquals(0, serve.awaitExit());
    }

    @Test
    void invalidValuesStopTheStartWithTheKeyAndTheReason() throws Exception {
        String keys = tmp.resolve("keys").toString();
        assertRefusedFromEnvironment(keys, "PTUN_GATEWAY_DIAL_TIMEOUT", "soon",
                "dial-timeout (from PTUN_GATEWAY_DIAL_TIMEOUT): invalid duration 'soon'");
        assertRefusedFromEnvironment(keys, "PTUN_GATEWAY_IO_THREADS", "0",
                "io-threads (from PTUN_GATEWAY_IO_THREADS) must be 1 to 64, got 0");
        assertRefusedFromEnvironment(keys, "PTUN_GATEWAY_DRAIN_TIMEOUT", "3h",
                "drain-timeout (from PTUN_GATEWAY_DRAIN_TIMEOUT) must be at most 1h, got 3h");

        Path config = Files.writeString(tmp.resolve("c.json"), "{\"listen\": \"0.0.0.0:70000\"}");
        Result file = run("serve", "--config", config.toString(), "--keys", keys, "--env", "e");
        assertEquals(1, file.exitCode(), file::toString);
        assertTrue(file.cliErrorLine().contains("listen (from config file " + config + ") must be HOST:PORT"),
                file::toString);

        Path unknown = Files.writeString(tmp.resolve("u.json"), "{\"listn\": \"127.0.0.1:0\"}");
        Result typo = run("serve", "--config", unknown.toString(), "--keys", keys, "--env", "e");
        assertEquals(1, typo.exitCode(), typo::toString);
        assertTrue(typo.cliErrorLine().contains("unknown key \"listn\""), typo::toString);

        assertRefusedFromEnvironment(keys, "PTUN_GATEWAY_ALLOW_TARGET", "10.0.0.0/8,nonsense",
                "allow-target (from PTUN_GATEWAY_ALLOW_TARGET): not a CIDR");

        Result missing = run("serve", "--keys", keys, "--env", "e");
        assertEquals(1, missing.exitCode(), missing::toString);
        assertTrue(missing.cliErrorLine().contains(
                "missing --listen HOST:PORT (or PTUN_GATEWAY_LISTEN, or \"listen\" in a --config file)"), missing::toString);
    }

    /** {@code serve} with {@code variable=value} in its environment exits 1 with {@code expected} in its error line. */
    private void assertRefusedFromEnvironment(String keys, String variable, String value, String expected) {
        env.put(variable, value);
        try {
            Result r = run("serve", "--keys", keys, "--env", "e", "--listen", "127.0.0.1:0");
            assertEquals(1, r.exitCode(), r::toString);
            assertTrue(r.cliErrorLine().contains(expected), r::toString);
        } finally {
            env.clear();
        }
    }
}
