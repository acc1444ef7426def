package dev.previewtunnel.spikes.e2e;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/** The JDK's built-in HTTP server on a loopback address, counting requests. For small pages and streams in tests. */
public class TinyHttpServer implements AutoCloseable {
    private final HttpServer server;
    private final ExecutorService executor;
    private final AtomicInteger requests = new AtomicInteger();

    public TinyHttpServer(String host, int port) {
        try {
            server = HttpServer.create(new InetSocketAddress(host, port), 64);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot listen on " + host + ":" + port, e);
        }
        executor = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "tiny-http");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
    }

    /** Adds a handler for a path prefix; every request is counted first. */
    public TinyHttpServer route(String path, HttpHandler handler) {
        server.createContext(path, exchange -> {
            requests.incrementAndGet();
            try {
                handler.handle(exchange);
            } catch (IOException | RuntimeException e) {
                exchange.close();
            }
        });
        return this;
    }

    public TinyHttpServer start() {
        server.start();
        return this;
    }

    public int port() {
        return server.getAddress().getPort();
    }

    public int requests() {
        return requests.get();
    }

    public static void send(HttpExchange ex, int status, String type, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", type);
        ex.getResponseHeaders().set("Cache-Control", "no-store");
        ex.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
