package dev.previewtunnel.ingress.hostile;

import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.ingress.Ingress;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.mux.wire.MuxProtocol;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Base64;

/**
 * The real ingress in process in front of a frame-level test gateway ({@code MuxTestServer} on {@code gatewayPort},
 * which takes the token {@code secret-token}), with one browser session granted {@code 127.0.0.1:5173} in environment
 * {@code env}; and browsers that ask it for a page and read nothing until the test says so.
 */
final class IngressBeforeTestGateway implements AutoCloseable {
    final Ingress ingress;
    final BrowserSession session;

    IngressBeforeTestGateway(int gatewayPort, Path keysDir, String env) throws Exception {
        ingress = Ingress.start(IngressConfig.defaults(new InetSocketAddress("127.0.0.1", 0),
                URI.create("ws://127.0.0.1:" + gatewayPort + MuxProtocol.DEFAULT_PATH)), () -> "secret-token", null);
        try {
            GrantIssuer issuer = new GrantIssuer(KeyDirectory.init(keysDir).signingKey(), Clock.systemUTC());
            session = ingress.sessions().add(BrowserSession.create("browser"));
            session.authorities().add(issuer.issueGrant(GrantSpec.tcp(env, "browser", "127.0.0.1", 5173),
                    Duration.ofMinutes(10)));
        } catch (Exception | Error e) {
            ingress.close();
            throw e;
        }
    }

    /**
     * A browser connection with a 4 KiB receive buffer that has sent {@code GET http://127.0.0.1:5173{path}} and reads
     * nothing until the caller does: the ingress's side of it fills up after a few KiB of answer.
     */
    Socket slowBrowserGet(String path) throws IOException {
        Socket browser = new Socket();
        try {
            browser.setReceiveBufferSize(4096);
            browser.connect(ingress.proxyAddress(), 5000);
            OutputStream out = browser.getOutputStream();
            out.write(("GET http://127.0.0.1:5173" + path + " HTTP/1.1\r\nHost: 127.0.0.1:5173\r\n"
                    + "Proxy-Authorization: Basic " + Base64.getEncoder().encodeToString((session.username() + ":"
                    + session.password()).getBytes(StandardCharsets.UTF_8)) + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            return browser;
        } catch (IOException | RuntimeException e) {
            browser.close();
            throw e;
        }
    }

    @Override
    public void close() {
        ingress.close();
    }
}
