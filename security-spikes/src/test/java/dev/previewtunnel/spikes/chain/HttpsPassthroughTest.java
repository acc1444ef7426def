package dev.previewtunnel.spikes.chain;

import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import dev.previewtunnel.spikes.lab.SelfSignedCertificate;
import dev.previewtunnel.spikes.stack.TunnelStack;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A granted dev server that speaks HTTPS itself is reached through {@code CONNECT} as raw TLS passthrough: the
 * browser validates the dev server's own certificate end to end, and the tunnel never terminates TLS (it holds no
 * key that could). What docs/desktop-ingress.md says about HTTPS upstreams.
 */
class HttpsPassthroughTest {
    private static final char[] PASS = "ptun-test".toCharArray();

    @Test
    void anHttpsDevServerIsReachedThroughConnectWithItsOwnCertificate(@TempDir Path dir) throws Exception {
        SelfSignedCertificate cert = SelfSignedCertificate.create(dir);
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(dir.resolve("relay.p12"))) {
            keys.load(in, PASS);
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, PASS);
        SSLContext serverTls = SSLContext.getInstance("TLS");
        serverTls.init(kmf.getKeyManagers(), null, null);
        HttpsServer devServer = HttpsServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        devServer.setHttpsConfigurator(new HttpsConfigurator(serverTls));
        AtomicInteger served = new AtomicInteger();
        devServer.createContext("/hello", exchange -> {
            byte[] body = "secure-hello".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
            served.incrementAndGet();
        });
        devServer.start();

        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        trust.setCertificateEntry("dev-server", cert.certificate());
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext browserTls = SSLContext.getInstance("TLS");
        browserTls.init(null, tmf.getTrustManagers(), null); // trusts the dev server's certificate, nothing else

        int port = devServer.getAddress().getPort();
        try (TunnelStack stack = TunnelStack.start(1)) {
            stack.grant("localhost", port);
            String user = stack.session().username();
            String password = stack.session().password();
            HttpClient browser = ProxyClients.httpClient(stack.proxy(), user, password, browserTls);
            HttpResponse<String> r = browser.send(HttpRequest.newBuilder(
                    URI.create("https://localhost:" + port + "/hello")).timeout(Duration.ofSeconds(15)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode());
            assertEquals("secure-hello", r.body());
            assertEquals(1, served.get(), "the dev server itself answered");
            // The certificate the client validated is the dev server's own: TLS ran end to end through the tunnel.
            assertArrayEquals(cert.certificate().getEncoded(),
                    r.sslSession().orElseThrow().getPeerCertificates()[0].getEncoded());
        } finally {
            devServer.stop(0);
        }
    }
}
