package dev.previewtunnel.spikes.demo;

import dev.previewtunnel.mux.local.FatalErrors;
import dev.previewtunnel.mux.local.NettyDefaults;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.sampleapp.SampleApp;
import dev.previewtunnel.spikes.stack.TunnelStack;

import java.net.Authenticator;
import java.net.PasswordAuthentication;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The README's first command: starts a sample app on the "environment's" loopback, an env-gateway, a
 * desktop-ingress with one browser session granted that app, then proves an HTTP request and a WebSocket
 * round trip through the tunnel, exactly as a browser makes them (absolute-form GET and CONNECT through the
 * authenticating proxy). Prints how to point Chromium at it. {@code --stay} keeps everything running.
 */
public final class DemoMain {
    static {
        // The demo's own logback.xml (warnings only), not the programs' JSON logging (ProgramLogbackConfigurator,
        // which steps aside for this property): set before anything here touches a logger.
        if (System.getProperty("logback.configurationFile") == null) {
            java.net.URL demoLogging = DemoMain.class.getResource("/logback.xml");
            if (demoLogging != null) {
                System.setProperty("logback.configurationFile", demoLogging.toString());
            }
        }
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        NettyDefaults.apply(); // before any Netty class initialises: Netty reads its properties once
        FatalErrors.install(); // out of memory or a dead event loop ends the process (docs/security.md)
        // The JDK's client refuses Basic auth on CONNECT unless this is emptied (browsers have no such rule).
        System.setProperty("jdk.http.auth.tunneling.disabledSchemes", "");
        boolean stay = false;
        int appPort = 0;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--stay" -> stay = true;
                case "--app-port" -> appPort = Integer.parseInt(args[++i]);
                case "--help", "-h" -> {
                    System.out.println("usage: java -jar security-spikes/target/demo.jar [--stay] [--app-port N]\n"
                            + "  Runs sample app -> env-gateway -> desktop-ingress on loopback and proves an HTTP\n"
                            + "  request and a WebSocket round trip through the tunnel.\n"
                            + "  --stay        keep running (Ctrl-C to stop) so a browser can use the proxy\n"
                            + "  --app-port N  port of the sample app (default: any free port)");
                    return;
                }
                default -> {
                    System.err.println("demo: unknown argument " + args[i] + " (see --help)");
                    System.exit(1);
                }
            }
        }
        try (SampleApp app = SampleApp.start("127.0.0.1", appPort);
             TunnelStack stack = TunnelStack.start(2)) {
            stack.grant("localhost", app.port());
            String user = stack.session().username();
            String password = stack.session().password();
            Path credentials = writeCredentials(user, password);
            HttpClient client = HttpClient.newBuilder()
                    .version(HttpClient.Version.HTTP_1_1)
                    .proxy(ProxySelector.of(stack.proxy()))
                    .authenticator(new Authenticator() {
                        @Override
                        protected PasswordAuthentication getPasswordAuthentication() {
                            return new PasswordAuthentication(user, password.toCharArray());
                        }
                    })
                    .build();
            String origin = "http://localhost:" + app.port();

            long t0 = System.nanoTime();
            HttpResponse<String> page = client.send(HttpRequest.newBuilder(URI.create(origin + "/")).build(),
                    HttpResponse.BodyHandlers.ofString());
            double httpMillis = (System.nanoTime() - t0) / 1e6;
            boolean httpOk = page.statusCode() == 200 && page.body().contains(SampleApp.INDEX_MARKER);

            CompletableFuture<String> echoed = new CompletableFuture<>();
            long t1 = System.nanoTime();
            WebSocket ws = client.newWebSocketBuilder()
                    .buildAsync(URI.create("ws://localhost:" + app.port() + "/ws"), new WebSocket.Listener() {
                        @Override
                        public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
                            echoed.complete(data.toString());
                            return null;
                        }
                    }).get(10, TimeUnit.SECONDS);
            ws.sendText("hello through the tunnel", true);
            String echo = echoed.get(10, TimeUnit.SECONDS);
            double wsMillis = (System.nanoTime() - t1) / 1e6;
            ws.sendClose(WebSocket.NORMAL_CLOSURE, "done").get(5, TimeUnit.SECONDS);
            boolean wsOk = "hello through the tunnel".equals(echo);

            ObjectNode result = JSON.createObjectNode()
                    .put("event", "demo")
                    .put("app", "127.0.0.1:" + app.port())
                    .put("gateway", stack.gateway().url(false))
                    .put("proxy", "127.0.0.1:" + stack.proxy().getPort())
                    .put("credentialsFile", credentials.toString())
                    .put("httpOk", httpOk)
                    .put("httpMillis", Math.round(httpMillis * 10) / 10.0)
                    .put("webSocketOk", wsOk)
                    .put("webSocketMillis", Math.round(wsMillis * 10) / 10.0)
                    .put("targetConnections", app.acceptedConnections());
            System.out.println(result);
            System.out.println();
            System.out.println(httpOk && wsOk
                    ? "OK: an HTTP request and a WebSocket round trip went browser-proxy -> ingress -> gateway -> app."
                    : "FAILED: see the JSON line above.");
            System.out.println("Point a browser at it (run with --stay to keep it up):");
            System.out.println("  chromium --proxy-server=http://127.0.0.1:" + stack.proxy().getPort()
                    + " --proxy-bypass-list='<-loopback>' --user-data-dir=$(mktemp -d) " + origin + "/");
            System.out.println("  and answer the proxy login with the username and password in " + credentials);
            if (!(httpOk && wsOk)) {
                Files.deleteIfExists(credentials);
                Files.deleteIfExists(credentials.getParent());
                System.exit(3);
            }
            try {
                if (stay) {
                    System.out.println("Running; press Ctrl-C to stop.");
                    CountDownLatch forever = new CountDownLatch(1);
                    Runtime.getRuntime().addShutdownHook(new Thread(forever::countDown));
                    forever.await();
                }
            } finally {
                // The credential dies with the demo's session: leave no secret file behind.
                Files.deleteIfExists(credentials);
                Files.deleteIfExists(credentials.getParent());
            }
        }
    }

    private static Path writeCredentials(String user, String password) throws java.io.IOException {
        Path dir = Files.createTempDirectory("ptun-demo", PosixFilePermissions.asFileAttribute(
                PosixFilePermissions.fromString("rwx------")));
        Path file = dir.resolve("credentials.json");
        Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(file, JSON.createObjectNode().put("username", user).put("password", password) + "\n");
        return file;
    }
}
