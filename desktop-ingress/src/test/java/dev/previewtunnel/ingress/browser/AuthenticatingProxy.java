package dev.previewtunnel.ingress.browser;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * A small blocking HTTP forward proxy for the launcher tests: Basic proxy auth with one credential (407 otherwise),
 * absolute-form GETs relayed to a loopback target (one target connection per request; the browser's connection
 * kept alive when the response has a length); {@code localhost} and
 * {@code *.localhost} mean 127.0.0.1; CONNECT (Chromium's background HTTPS) is refused. It records the
 * authority and path of every request it relayed.
 */
final class AuthenticatingProxy implements AutoCloseable {
    private final ServerSocket server;
    private final String expected;
    private final AtomicInteger challenges = new AtomicInteger();
    private final List<String> relayed = new CopyOnWriteArrayList<>();
    private final List<Socket> open = new ArrayList<>();
    /** Guarded by {@code open}: a connection accepted as the proxy closes is closed too, never served. */
    private boolean closed;

    AuthenticatingProxy(int port, String username, String password) throws IOException {
        this.expected = "Basic " + Base64.getEncoder()
                .encodeToString((username + ":" + password).getBytes(StandardCharsets.UTF_8));
        this.server = new ServerSocket();
        server.setReuseAddress(true);
        bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
        Thread accept = new Thread(this::acceptLoop, "test-proxy-accept");
        accept.setDaemon(true);
        accept.start();
    }

    /** Binds, retrying (bounded) while a previous proxy's socket on the same port is still being closed. */
    private void bind(InetSocketAddress address) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            try {
                server.bind(address);
                return;
            } catch (BindException e) {
                if (System.nanoTime() - deadline > 0) {
                    throw e;
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
            }
        }
    }

    InetSocketAddress address() {
        return (InetSocketAddress) server.getLocalSocketAddress();
    }

    /** How many 407s were sent. */
    int challenges() {
        return challenges.get();
    }

    /** {@code host:port/path} of each relayed request. */
    List<String> relayed() {
        return relayed;
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                Socket s = server.accept();
                synchronized (open) {
                    if (closed) {
                        s.close();
                        return;
                    }
                    open.add(s);
                }
                Thread t = new Thread(() -> serve(s), "test-proxy-conn");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    private void serve(Socket client) {
        try (client) {
            InputStream in = client.getInputStream();
            OutputStream out = client.getOutputStream();
            while (true) {
                List<String> head = readHead(in);
                if (head.isEmpty()) {
                    return;
                }
                String[] line = head.get(0).split(" ");
                String auth = header(head, "proxy-authorization");
                if (!expected.equals(auth)) {
                    challenges.incrementAndGet();
                    out.write(("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\n"
                            + "Content-Length: 0\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                    continue;
                }
                if (!"GET".equals(line[0]) || !line[1].startsWith("http://")) {
                    out.write("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .getBytes(StandardCharsets.US_ASCII));
                    return;
                }
                if (!relay(URI.create(line[1]), head, out)) {
                    return;
                }
            }
        } catch (IOException e) {
            // the browser went away
        } finally {
            synchronized (open) {
                open.remove(client);
            }
        }
    }

    /** Relays one request; true when the browser connection stays open (the response had a length). */
    private boolean relay(URI uri, List<String> head, OutputStream out) throws IOException {
        String host = uri.getHost();
        if (!host.equals("localhost") && !host.endsWith(".localhost") && !host.equals("127.0.0.1")) {
            out.write("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .getBytes(StandardCharsets.US_ASCII));
            return false;
        }
        relayed.add(uri.getAuthority() + uri.getRawPath());
        StringBuilder req = new StringBuilder("GET ").append(uri.getRawPath().isEmpty() ? "/" : uri.getRawPath())
                .append(uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery()).append(" HTTP/1.1\r\n");
        for (String h : head.subList(1, head.size())) {
            String name = h.substring(0, Math.max(0, h.indexOf(':'))).toLowerCase();
            if (!name.startsWith("proxy-") && !name.equals("connection")) {
                req.append(h).append("\r\n");
            }
        }
        req.append("Connection: close\r\n\r\n");
        try (Socket target = new Socket(InetAddress.getLoopbackAddress(), uri.getPort())) {
            target.getOutputStream().write(req.toString().getBytes(StandardCharsets.ISO_8859_1));
            InputStream response = target.getInputStream();
            List<String> responseHead = readHead(response);
            String length = header(responseHead, "content-length");
            StringBuilder h = new StringBuilder();
            for (String l : responseHead) {
                if (!l.regionMatches(true, 0, "connection:", 0, 11)) {
                    h.append(l).append("\r\n");
                }
            }
            out.write(h.append(length == null ? "Connection: close\r\n\r\n" : "\r\n").toString()
                    .getBytes(StandardCharsets.ISO_8859_1));
            if (length == null) {
                response.transferTo(out);
                return false;
            }
            out.write(response.readNBytes(Integer.parseInt(length)));
            out.flush();
            return true;
        }
    }

    private static String header(List<String> head, String name) {
        for (String h : head.subList(1, head.size())) {
            int colon = h.indexOf(':');
            if (colon > 0 && h.substring(0, colon).trim().equalsIgnoreCase(name)) {
                return h.substring(colon + 1).trim();
            }
        }
        return null;
    }

    private static List<String> readHead(InputStream in) throws IOException {
        List<String> lines = new ArrayList<>();
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) >= 0) {
            if (b == '\n') {
                String l = line.toString(StandardCharsets.ISO_8859_1).stripTrailing();
                line.reset();
                if (l.isEmpty()) {
                    return lines;
                }
                lines.add(l);
            } else {
                line.write(b);
            }
        }
        return List.of();
    }

    @Override
    public void close() throws IOException {
        synchronized (open) {
            closed = true;
        }
        server.close();
        synchronized (open) {
            for (Socket s : open) {
                s.close();
            }
        }
    }
}
