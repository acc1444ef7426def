package dev.previewtunnel.ingress.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.cli.InProcessCli;
import dev.previewtunnel.cli.InProcessCli.Result;
import dev.previewtunnel.json.JsonTrees;
import dev.previewtunnel.testing.ReadyLines;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Runs the desktop-ingress CLI in-process through the shared {@link InProcessCli} harness. */
final class IngressCliHarness {
    static final String ERROR_PREFIX = "desktop-ingress: ";

    private IngressCliHarness() {
    }

    static Result run(String... args) {
        return InProcessCli.run(new IngressMain(), ERROR_PREFIX, args);
    }

    /** The ready line a program started as a process prints on stdout; fails after 60 s without one. */
    static JsonNode readyLineOf(Process p, String name) throws Exception {
        String ready = ReadyLines.await(p, Duration.ofSeconds(60));
        if (ready == null) {
            boolean ended = p.waitFor(10, TimeUnit.SECONDS);
            throw new AssertionError(name + " did not start (" + (ended ? "exit " + p.exitValue() : "still running")
                    + ")");
        }
        return JsonTrees.parse(ready);
    }

    /** The proxy address of a running ingress, from its ready line. */
    static InetSocketAddress proxyAddress(JsonNode ready) {
        String proxy = ready.get("proxy").asText();
        int colon = proxy.lastIndexOf(':');
        return new InetSocketAddress(proxy.substring(0, colon), Integer.parseInt(proxy.substring(colon + 1)));
    }

    /** {@code Proxy-Authorization: Basic ...} for the session whose credentials file the ready line names. */
    static String proxyAuthorization(JsonNode ready) throws IOException {
        JsonNode c = new ObjectMapper().readTree(Files.readString(Path.of(ready.get("credentialsFile").asText())));
        return "Proxy-Authorization: Basic " + Base64.getEncoder().encodeToString((c.get("username").asText() + ":"
                + c.get("password").asText()).getBytes(StandardCharsets.UTF_8));
    }

    /**
     * A browser connection to the running ingress that asked for {@code http://target/pathAndQuery} with the
     * session's credential ({@code Connection: close}) and got a {@code 200} head: its input is at the body.
     */
    static Socket getThroughProxy(JsonNode ready, String target, String pathAndQuery) throws IOException {
        String auth = proxyAuthorization(ready);
        InetSocketAddress proxy = proxyAddress(ready);
        Socket browser = new Socket(proxy.getAddress(), proxy.getPort());
        try {
            browser.setSoTimeout(30_000);
            OutputStream out = browser.getOutputStream();
            out.write(("GET http://" + target + pathAndQuery + " HTTP/1.1\r\nHost: " + target + "\r\n" + auth
                    + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String head = readHead(browser.getInputStream());
            assertTrue(head.startsWith("HTTP/1.1 200"), head);
            return browser;
        } catch (IOException | RuntimeException | Error e) {
            browser.close();
            throw e;
        }
    }

    /** Reads a response head up to its empty line (or the end of the stream). */
    static String readHead(InputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                break;
            }
            head.append((char) b);
        }
        return head.toString();
    }

    /**
     * The ingress's own stderr lines: without the JSON lines of the gateway fixture that shares this JVM. When the
     * ingress stops, that gateway logs the closed connection on its event loop, racing the capture's end; CI once
     * failed a text-format check on exactly such a {@code "side":"gateway"} audit line.
     */
    static java.util.List<String> ingressLines(String err) {
        return err.lines()
                .filter(l -> !(l.startsWith("{") && (l.contains("\"side\":\"gateway\"")
                        || l.contains("\"loggerName\":\"dev.previewtunnel.gateway.")))).toList();
    }

    /** A result captured by hand (with {@link InProcessCli.Captured}). */
    static Result result(int exitCode, String out, String err) {
        return new Result(exitCode, out, err, ERROR_PREFIX);
    }

    /** {@code run} on a background thread; {@link #close()} stops it and returns its exit code. */
    static final class RunningIngress extends InProcessCli.Running<RunCommand> {
        private RunningIngress(String... args) {
            super(new IngressMain(), "run", "test-ingress-run", ERROR_PREFIX, args);
        }

        /** Starts {@code run} and waits until it is ready or has failed. */
        static RunningIngress start(String... args) throws InterruptedException {
            return started(new RunningIngress(args));
        }

        @Override
        protected boolean awaitStarted(RunCommand command, long timeout, TimeUnit unit) throws InterruptedException {
            return command.awaitStarted(timeout, unit);
        }

        @Override
        protected void stop(RunCommand command) {
            command.stop();
        }
    }
}
