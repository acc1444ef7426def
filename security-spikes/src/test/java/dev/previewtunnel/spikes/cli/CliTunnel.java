package dev.previewtunnel.spikes.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.sampleapp.SampleApp;

import java.io.IOException;
import java.io.InputStream;
import java.net.Authenticator;
import java.net.InetSocketAddress;
import java.net.PasswordAuthentication;
import java.net.ProxySelector;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Base64;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the process-level tunnel tests share: keys, a token and a grant issued with the real {@code env-gateway}
 * commands; a running ingress's status (the object {@code desktop-ingress status --json} prints, read from the
 * control API it reads it from, so a test can poll it every few milliseconds); requests through its proxy.
 */
final class CliTunnel {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration CLI = Duration.ofSeconds(60);

    private CliTunnel() {
    }

    /** Signing keys, and owner-only files holding a connection token for {@code env} and a grant for a target. */
    record Secrets(Path keys, Path token, Path grant) {
        static Secrets issue(Path dir, String env, String target) throws Exception {
            Path keys = dir.resolve("keys");
            CliProcess init = CliProcess.run(CLI, "env-gateway", "keys", "init", "--dir", keys.toString());
            assertEquals(0, init.process.exitValue(), init::stderr);
            String token = CliProcess.run(CLI, "env-gateway", "token", "issue", "--keys", keys.toString(),
                    "--env", env).stdout().trim();
            String grant = CliProcess.run(CLI, "env-gateway", "grant", "issue", "--keys", keys.toString(),
                    "--env", env, "--session", "default", "--target", target, "--ttl", "10m").stdout().trim();
            return new Secrets(keys, secretFile(dir.resolve("token"), token), secretFile(dir.resolve("grant"), grant));
        }

        private static Path secretFile(Path file, String content) throws IOException {
            assertTrue(!content.isEmpty(), "issued nothing for " + file.getFileName());
            Files.writeString(file, content + "\n");
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
            return file;
        }
    }

    private static final HttpClient CONTROL = HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY)
            .connectTimeout(Duration.ofSeconds(5)).build();

    /** The {@code tunnel} object of the ingress's status: {@code state}, {@code reconnects}, ... */
    static JsonNode tunnelStatus(Path stateDir) throws Exception {
        JsonNode control = JSON.readTree(stateDir.resolve("control.json").toFile());
        HttpResponse<String> r = CONTROL.send(HttpRequest.newBuilder(
                        URI.create(control.get("url").asText()).resolve("/v1/status"))
                .header("Authorization", "Bearer " + control.get("token").asText())
                .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r::body);
        return JSON.readTree(r.body()).path("tunnel");
    }

    /** An HTTP/1.1 client that goes through the ingress's proxy with its default session's credential. */
    static HttpClient proxiedClient(JsonNode ready) throws IOException {
        JsonNode c = credentials(ready);
        String user = c.get("username").asText();
        char[] password = c.get("password").asText().toCharArray();
        return HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .proxy(ProxySelector.of(proxy(ready)))
                .authenticator(new Authenticator() {
                    @Override
                    protected PasswordAuthentication getPasswordAuthentication() {
                        return new PasswordAuthentication(user, password);
                    }
                })
                .build();
    }

    /**
     * {@code GET /bytes?n=size} of the sample app on {@code appPort} through {@code client} (the proxy): 200, exactly
     * {@code size} bytes, and the sample app's pattern (its CRC).
     */
    static void assertPatternDownload(HttpClient client, int appPort, long size) throws Exception {
        HttpResponse<InputStream> r = client.send(HttpRequest.newBuilder(
                URI.create("http://localhost:" + appPort + "/bytes?n=" + size))
                .timeout(CLI).build(), HttpResponse.BodyHandlers.ofInputStream());
        assertEquals(200, r.statusCode());
        CRC32 crc = new CRC32();
        long n;
        try (InputStream in = r.body()) {
            byte[] buf = new byte[64 * 1024];
            long total = 0;
            int k;
            while ((k = in.read(buf)) > 0) {
                crc.update(buf, 0, k);
                total += k;
            }
            n = total;
        }
        assertEquals(size, n);
        assertEquals(SampleApp.patternCrc(size).getValue(), crc.getValue());
    }

    /** A browser connection that asked for {@code pathAndQuery} and read the response head, which must be 200. */
    static Socket download(JsonNode ready, String target, String pathAndQuery) throws IOException {
        InetSocketAddress proxy = proxy(ready);
        Socket s = new Socket(proxy.getAddress(), proxy.getPort());
        s.setSoTimeout(60_000);
        JsonNode c = credentials(ready);
        String basic = Base64.getEncoder().encodeToString((c.get("username").asText() + ":"
                + c.get("password").asText()).getBytes(StandardCharsets.UTF_8));
        s.getOutputStream().write(("GET http://" + target + pathAndQuery + " HTTP/1.1\r\nHost: " + target
                + "\r\nProxy-Authorization: Basic " + basic + "\r\nConnection: close\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        StringBuilder head = new StringBuilder();
        InputStream in = s.getInputStream();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                break;
            }
            head.append((char) b);
        }
        assertTrue(head.toString().startsWith("HTTP/1.1 200"), head::toString);
        return s;
    }

    private static JsonNode credentials(JsonNode ready) throws IOException {
        return JSON.readTree(Files.readString(Path.of(ready.get("credentialsFile").asText())));
    }

    private static InetSocketAddress proxy(JsonNode ready) {
        String[] hostPort = ready.get("proxy").asText().split(":");
        return new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1]));
    }
}
