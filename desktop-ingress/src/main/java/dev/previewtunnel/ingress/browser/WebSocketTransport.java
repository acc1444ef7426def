package dev.previewtunnel.ingress.browser;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** DevTools over a WebSocket ({@code ws://127.0.0.1:PORT/devtools/browser/ID}), with the JDK's client and no proxy. */
final class WebSocketTransport implements DevToolsTransport {
    private final ExecutorService httpThreads;
    private final WebSocket socket;

    private WebSocketTransport(ExecutorService httpThreads, WebSocket socket) {
        this.httpThreads = httpThreads;
        this.socket = socket;
    }

    static WebSocketTransport open(URI endpoint, Inbound inbound) {
        ExecutorService httpThreads = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "devtools-http");
            t.setDaemon(true);
            return t;
        });
        // No proxy for the DevTools socket itself, whatever the JVM's defaults are.
        HttpClient http = HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY).executor(httpThreads)
                .connectTimeout(Duration.ofSeconds(10)).build();
        try {
            WebSocket socket = http.newWebSocketBuilder().connectTimeout(Duration.ofSeconds(10))
                    .buildAsync(endpoint, new Receiver(inbound)).get(15, TimeUnit.SECONDS);
            return new WebSocketTransport(httpThreads, socket);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            httpThreads.shutdownNow();
            throw new IllegalStateException("interrupted connecting to " + endpoint, e);
        } catch (ExecutionException | TimeoutException e) {
            httpThreads.shutdownNow();
            throw new IllegalStateException("cannot open the DevTools WebSocket " + endpoint, e);
        }
    }

    @Override
    public void send(String message) throws IOException {
        try {
            socket.sendText(message, true).get(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while sending");
        } catch (ExecutionException | TimeoutException e) {
            throw new IOException(e.toString());
        }
    }

    @Override
    public void close() {
        try {
            if (!socket.isOutputClosed()) {
                socket.sendClose(WebSocket.NORMAL_CLOSURE, "bye").get(2, TimeUnit.SECONDS);
            }
        } catch (Exception e) {
            // the browser may already be gone
        } finally {
            socket.abort();
            httpThreads.shutdownNow();
        }
    }

    private static final class Receiver implements WebSocket.Listener {
        private final Inbound inbound;
        private final StringBuilder partial = new StringBuilder();

        Receiver(Inbound inbound) {
            this.inbound = inbound;
        }

        @Override
        public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
            partial.append(data);
            if (last) {
                String text = partial.toString();
                partial.setLength(0);
                inbound.message(text);
            }
            webSocket.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
            inbound.ended("closed by the browser (" + statusCode + ")");
            return null;
        }

        @Override
        public void onError(WebSocket webSocket, Throwable error) {
            inbound.ended("failed: " + error);
        }
    }
}
