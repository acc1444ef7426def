package dev.previewtunnel.sampleapp;

import io.netty.handler.codec.http.HttpResponseStatus;

/** {@code GET /}: the page that opens a WebSocket to {@code /ws}; {@code GET /hello}: a fixed line of text. */
final class PageRoutes {
    static final String HELLO_BODY = "hello from the sample app\n";
    static final String INDEX_HTML = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <title>Preview tunnel sample app</title>
            </head>
            <body>
            <h1>Preview tunnel sample app</h1>
            <p id="marker">sample-app-ok</p>
            <form id="f"><input id="msg" value="hello over websocket" size="40"> <button>send</button></form>
            <p>WebSocket: <span id="state">connecting</span></p>
            <pre id="log"></pre>
            <script>
            (function () {
              var scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
              var ws = new WebSocket(scheme + location.host + '/ws');
              var state = document.getElementById('state');
              var log = document.getElementById('log');
              ws.onopen = function () { state.textContent = 'open'; ws.send('ping from the page'); };
              ws.onclose = function () { state.textContent = 'closed'; };
              ws.onerror = function () { state.textContent = 'error'; };
              ws.onmessage = function (e) { log.textContent += 'echo: ' + e.data + '\\n'; };
              document.getElementById('f').onsubmit = function (e) {
                e.preventDefault();
                if (ws.readyState === WebSocket.OPEN) { ws.send(document.getElementById('msg').value); }
              };
            })();
            </script>
            </body>
            </html>
            """;

    private PageRoutes() {
    }

    static void index(Reply reply) {
        reply.respond(HttpResponseStatus.OK, Reply.HTML, INDEX_HTML, null);
    }

    static void hello(Reply reply) {
        reply.text(HttpResponseStatus.OK, HELLO_BODY);
    }
}
