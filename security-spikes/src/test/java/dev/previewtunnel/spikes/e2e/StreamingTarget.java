package dev.previewtunnel.spikes.e2e;

import com.sun.net.httpserver.HttpExchange;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * An app page that uses its own WebSocket (to the sample app's {@code /ws} echo) and an {@code EventSource}
 * stream ({@code /sse?n=N&intervalMs=I}: N events, one every I ms, then {@code done}), as a dev app with a
 * front end and an API on two loopback ports would. The measurements are taken in the page.
 */
public final class StreamingTarget extends TinyHttpServer {
    static final String PAGE = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>streaming app</title></head>
            <body><h1 id="title">streaming app</h1><pre id="log"></pre>
            <script>
            window.__sseTest = function (n, intervalMs) {
              return new Promise(function (resolve) {
                var t0 = performance.now();
                var times = [];
                var es = new EventSource('/sse?n=' + n + '&intervalMs=' + intervalMs);
                var timer = setTimeout(function () { es.close(); resolve({ ok: false, why: 'timeout', events: times.length }); }, 30000);
                es.onmessage = function (e) {
                  if (e.data === 'done') {
                    es.close();
                    clearTimeout(timer);
                    var spread = times.length ? times[times.length - 1] - times[0] : 0;
                    resolve({ ok: times.length === n, events: times.length, firstEventMs: times[0],
                              spreadMs: spread, expectedSpreadMs: (n - 1) * intervalMs });
                    return;
                  }
                  if (e.data !== 'event-' + times.length) { es.close(); resolve({ ok: false, why: 'out of order: ' + e.data }); return; }
                  times.push(performance.now() - t0);
                };
                es.onerror = function () { if (es.readyState === 2) { clearTimeout(timer); resolve({ ok: false, why: 'closed', events: times.length }); } };
              });
            };
            window.__wsTest = async function (url, n) {
              var ws = new WebSocket(url);
              ws.binaryType = 'arraybuffer';
              await new Promise(function (res, rej) { ws.onopen = res; ws.onerror = function () { rej(new Error('websocket error')); }; });
              var rtts = [];
              for (var i = 0; i < n; i++) {
                var msg = 'message-' + i + '-' + 'x'.repeat((i % 7) * 100);
                var t0 = performance.now();
                var echoed = await new Promise(function (res) { ws.onmessage = function (e) { res(e.data); }; ws.send(msg); });
                if (echoed !== msg) { throw new Error('echo mismatch at ' + i); }
                rtts.push(performance.now() - t0);
              }
              var big = new Uint8Array(256 * 1024);
              for (var j = 0; j < big.length; j++) { big[j] = (j * 31) & 255; }
              var t1 = performance.now();
              var back = await new Promise(function (res) { ws.onmessage = function (e) { res(new Uint8Array(e.data)); }; ws.send(big); });
              var bigMs = performance.now() - t1;
              var same = back.length === big.length;
              for (var k = 0; same && k < big.length; k++) { same = back[k] === big[k]; }
              ws.close();
              rtts.sort(function (a, b) { return a - b; });
              return { messages: n, medianMs: rtts[n >> 1], p95Ms: rtts[Math.floor(n * 0.95)], maxMs: rtts[n - 1],
                       binary256KiBEchoOk: same, binary256KiBEchoMs: bigMs };
            };
            window.__ready = true;
            </script></body></html>
            """;

    private final ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "sse-ticker");
        t.setDaemon(true);
        return t;
    });
    private final AtomicInteger streams = new AtomicInteger();

    public StreamingTarget() {
        super("127.0.0.1", 0);
        route("/sse", this::sse);
        route("/", ex -> send(ex, 200, "text/html; charset=utf-8", PAGE));
        start();
    }

    public int sseStreams() {
        return streams.get();
    }

    private void sse(HttpExchange ex) throws IOException {
        streams.incrementAndGet();
        String q = ex.getRequestURI().getQuery() == null ? "" : ex.getRequestURI().getQuery();
        int n = intParam(q, "n", 10);
        int interval = intParam(q, "intervalMs", 50);
        ex.getResponseHeaders().set("Content-Type", "text/event-stream");
        ex.getResponseHeaders().set("Cache-Control", "no-store");
        ex.sendResponseHeaders(200, 0); // chunked: each flush is one chunk on the wire
        OutputStream out = ex.getResponseBody();
        AtomicInteger sent = new AtomicInteger();
        AtomicReference<ScheduledFuture<?>> task = new AtomicReference<>();
        task.set(ticker.scheduleAtFixedRate(() -> {
            int i = sent.getAndIncrement();
            try {
                String event = i < n ? "data: event-" + i + "\n\n" : "data: done\n\n";
                out.write(event.getBytes(StandardCharsets.UTF_8));
                out.flush();
                if (i >= n) {
                    out.close();
                    ex.close();
                    task.get().cancel(false);
                }
            } catch (IOException e) {
                ex.close();
                task.get().cancel(false);
            }
        }, interval, interval, TimeUnit.MILLISECONDS));
    }

    private static int intParam(String query, String name, int dflt) {
        for (String kv : query.split("&")) {
            if (kv.startsWith(name + "=")) {
                return Integer.parseInt(kv.substring(name.length() + 1));
            }
        }
        return dflt;
    }

    @Override
    public void close() {
        ticker.shutdownNow();
        super.close();
    }
}
