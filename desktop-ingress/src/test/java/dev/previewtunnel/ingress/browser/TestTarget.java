package dev.previewtunnel.ingress.browser;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;

/**
 * The local target behind {@link AuthenticatingProxy}: {@code /private} asks for the site's own Basic auth (401),
 * {@code /many} is a page with {@value #SUBRESOURCES} images (titled {@code many-loaded:N} once N loaded), anything else a small HTML page titled by its path.
 * Records the {@code Authorization} header of every request (the proxy credential must never arrive here).
 */
final class TestTarget implements AutoCloseable {
    static final int SUBRESOURCES = 50;

    private final HttpServer server;
    private final List<String> authorizations = new CopyOnWriteArrayList<>();
    private final List<String> paths = new CopyOnWriteArrayList<>();

    TestTarget() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
        server.setExecutor(Executors.newFixedThreadPool(4, r -> {
            Thread t = new Thread(r, "test-target");
            t.setDaemon(true);
            return t;
        }));
        server.createContext("/", this::handle);
        server.start();
    }

    int port() {
        return server.getAddress().getPort();
    }

    List<String> authorizations() {
        return authorizations;
    }

    List<String> paths() {
        return paths;
    }

    private void handle(HttpExchange ex) throws IOException {
        String path = ex.getRequestURI().getPath();
        paths.add(path);
        String auth = ex.getRequestHeaders().getFirst("Authorization");
        if (auth != null) {
            authorizations.add(auth);
        }
        if (path.equals("/private")) {
            ex.getResponseHeaders().add("WWW-Authenticate", "Basic realm=\"site\"");
            send(ex, 401, "text/html", "<title>site-401</title>denied");
        } else if (path.startsWith("/img/")) {
            send(ex, 200, "image/svg+xml", "<svg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/>");
        } else if (path.equals("/many")) {
            StringBuilder b = new StringBuilder("<title>many</title><body onload=\"document.title = 'many-loaded:'"
                    + " + [...document.images].filter(i => i.naturalWidth > 0).length\">");
            for (int i = 0; i < SUBRESOURCES; i++) {
                b.append("<img src='/img/").append(i).append("?r=").append(System.nanoTime()).append("'>");
            }
            send(ex, 200, "text/html", b.toString());
        } else {
            send(ex, 200, "text/html", "<title>page" + path + "</title>hello");
        }
    }

    private static void send(HttpExchange ex, int status, String type, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().add("Content-Type", type);
        ex.getResponseHeaders().add("Cache-Control", "no-store");
        ex.sendResponseHeaders(status, bytes.length);
        ex.getResponseBody().write(bytes);
        ex.close();
    }

    @Override
    public void close() {
        server.stop(0);
        ((java.util.concurrent.ExecutorService) server.getExecutor()).shutdownNow();
    }
}
