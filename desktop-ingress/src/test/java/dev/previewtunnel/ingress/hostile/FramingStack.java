package dev.previewtunnel.ingress.hostile;

import dev.previewtunnel.gateway.GatewayConfig;
import dev.previewtunnel.gateway.GatewayServer;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.ingress.Ingress;
import dev.previewtunnel.ingress.IngressConfig;
import dev.previewtunnel.ingress.session.BrowserSession;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real ingress and a real gateway in front of a counting loopback target, for the framing and authority tests:
 * the target counts the connections it accepted and records every request it read in full (request line and body),
 * and answers each with {@code 200} and the request path as body, keeping the connection alive.
 */
final class FramingStack implements AutoCloseable {
    static final String ENV = "hostile-env";

    final GatewayServer gateway;
    final Ingress ingress;
    final BrowserSession session;
    final ServerSocket target;
    final AtomicInteger accepted = new AtomicInteger();
    /** "METHOD path body-length" per request the target read completely. */
    final List<String> requests = new CopyOnWriteArrayList<>();
    /** The request line of every head the target read, complete body or not. */
    final List<String> heads = new CopyOnWriteArrayList<>();
    private final List<Socket> targetSockets = new CopyOnWriteArrayList<>();
    private final Thread acceptor;

    FramingStack(Path dir) throws Exception {
        KeyDirectory keys = KeyDirectory.init(dir.resolve("keys"));
        GrantIssuer issuer = new GrantIssuer(keys.signingKey(), Clock.systemUTC());
        gateway = GatewayServer.start(GatewayConfig.defaults(ENV, new InetSocketAddress("127.0.0.1", 0)),
                keys.verificationKeys(), null, new SimpleMeterRegistry());
        target = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
        acceptor = new Thread(this::accept, "framing-target");
        acceptor.setDaemon(true);
        acceptor.start();
        String token = issuer.issueConnectionToken(ENV, Duration.ofHours(1));
        ingress = Ingress.start(IngressConfig.defaults(new InetSocketAddress("127.0.0.1", 0),
                URI.create(gateway.url(false))), () -> token, null);
        session = ingress.sessions().add(BrowserSession.create("hostile"));
        session.authorities().add(issuer.issueGrant(GrantSpec.tcp(ENV, "hostile", "127.0.0.1", port()),
                Duration.ofMinutes(10)));
    }

    int port() {
        return target.getLocalPort();
    }

    InetSocketAddress proxy() {
        return ingress.proxyAddress();
    }

    String auth() {
        return "Proxy-Authorization: Basic " + Base64.getEncoder().encodeToString(
                (session.username() + ":" + session.password()).getBytes(StandardCharsets.UTF_8)) + "\r\n";
    }

    private void accept() {
        while (!target.isClosed()) {
            try {
                Socket s = target.accept();
                accepted.incrementAndGet();
                targetSockets.add(s);
                Thread t = new Thread(() -> serve(s), "framing-target-conn");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    /** Minimal HTTP/1.1 origin: Content-Length and chunked bodies, keep-alive, answers with the path. */
    private void serve(Socket s) {
        try (s) {
            InputStream in = new BufferedInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            while (true) {
                String line = line(in);
                if (line == null) {
                    return;
                }
                if (line.isEmpty()) {
                    continue;
                }
                long length = 0;
                boolean chunked = false;
                String h;
                while ((h = line(in)) != null && !h.isEmpty()) {
                    String lower = h.toLowerCase(Locale.ROOT);
                    if (lower.startsWith("content-length:")) {
                        length = Long.parseLong(lower.substring(15).trim());
                    } else if (lower.startsWith("transfer-encoding:") && lower.contains("chunked")) {
                        chunked = true;
                    }
                }
                if (h == null) {
                    return;
                }
                heads.add(line);
                long body = 0;
                if (chunked) {
                    while (true) {
                        String size = line(in);
                        if (size == null) {
                            return;
                        }
                        long n = Long.parseLong(size.split(";")[0].trim(), 16);
                        if (n == 0) {
                            while ((h = line(in)) != null && !h.isEmpty()) {
                                // trailers
                            }
                            break;
                        }
                        if (skip(in, n) < n) {
                            return;
                        }
                        body += n;
                        line(in);
                    }
                } else if (skip(in, length) < length) {
                    return;
                } else {
                    body = length;
                }
                String[] parts = line.split(" ");
                requests.add(parts[0] + " " + parts[1] + " " + body);
                byte[] answer = parts[1].getBytes(StandardCharsets.US_ASCII);
                out.write(("HTTP/1.1 200 OK\r\nContent-Length: " + answer.length + "\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.write(answer);
                out.flush();
            }
        } catch (IOException | RuntimeException e) {
            // the ingress closed the stream, or sent what this origin does not parse: it counts as no request
        }
    }

    private static long skip(InputStream in, long n) throws IOException {
        long done = 0;
        while (done < n && in.read() >= 0) {
            done++;
        }
        return done;
    }

    private static String line(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) >= 0) {
            if (c == '\n') {
                String s = b.toString(StandardCharsets.ISO_8859_1);
                return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
            }
            b.write(c);
        }
        return null;
    }

    /**
     * Sends {@code wire} on a fresh proxy connection and reads until the ingress closes it, or until
     * {@code responses} complete answers (Content-Length framed) have arrived; fails after 10 s either way.
     */
    Answer exchange(String wire, int responses) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(proxy(), 5000);
            s.setSoTimeout(10_000);
            s.getOutputStream().write(wire.getBytes(StandardCharsets.ISO_8859_1));
            s.getOutputStream().flush();
            InputStream in = s.getInputStream();
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            try {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    got.write(buf, 0, n);
                    if (responses > 0 && Answer.parse(got.toString(StandardCharsets.ISO_8859_1)).size() >= responses) {
                        break;
                    }
                }
            } catch (SocketTimeoutException e) {
                throw new AssertionError("no answer and no close within 10 s; got: "
                        + got.toString(StandardCharsets.ISO_8859_1));
            } catch (IOException e) {
                // reset after the answer
            }
            return new Answer(Answer.parse(got.toString(StandardCharsets.ISO_8859_1)));
        }
    }

    /**
     * CONNECT as a browser does it: {@code connect}, then, once the 200 has arrived, {@code inside} through the
     * tunnel; returns both answers.
     */
    Answer tunnel(String connect, String inside) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(proxy(), 5000);
            s.setSoTimeout(10_000);
            s.getOutputStream().write(connect.getBytes(StandardCharsets.ISO_8859_1));
            s.getOutputStream().flush();
            InputStream in = s.getInputStream();
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            boolean sent = false;
            int n;
            byte[] buf = new byte[8192];
            while ((n = in.read(buf)) >= 0) {
                got.write(buf, 0, n);
                List<Answer.Response> so = Answer.parse(got.toString(StandardCharsets.ISO_8859_1));
                if (!sent && so.size() == 1 && so.get(0).status() == 200) {
                    s.getOutputStream().write(inside.getBytes(StandardCharsets.ISO_8859_1));
                    s.getOutputStream().flush();
                    sent = true;
                } else if (so.size() >= 2 || (!so.isEmpty() && so.get(0).status() != 200)) {
                    break;
                }
            }
            return new Answer(Answer.parse(got.toString(StandardCharsets.ISO_8859_1)));
        }
    }

    /** The complete responses read, in order. */
    record Answer(List<Response> responses) {
        record Response(int status, String code, String body) {
        }

        Response first() {
            if (responses.isEmpty()) {
                throw new AssertionError("no response");
            }
            return responses.get(0);
        }

        static List<Response> parse(String text) {
            List<Response> out = new ArrayList<>();
            int at = 0;
            while (true) {
                int end = text.indexOf("\r\n\r\n", at);
                if (end < 0) {
                    return out;
                }
                String[] lines = text.substring(at, end).split("\r\n");
                int status = Integer.parseInt(lines[0].split(" ")[1]);
                int length = 0;
                String code = null;
                for (String l : lines) {
                    String lower = l.toLowerCase(Locale.ROOT);
                    if (lower.startsWith("content-length:")) {
                        length = Integer.parseInt(l.substring(15).trim());
                    } else if (lower.startsWith("ptun-error:")) {
                        code = l.substring(11).trim();
                    }
                }
                if (text.length() < end + 4 + length) {
                    return out;
                }
                out.add(new Response(status, code, text.substring(end + 4, end + 4 + length)));
                at = end + 4 + length;
            }
        }
    }

    @Override
    public void close() throws IOException {
        ingress.close();
        gateway.close();
        target.close();
        for (Socket s : targetSockets) {
            s.close();
        }
    }
}
