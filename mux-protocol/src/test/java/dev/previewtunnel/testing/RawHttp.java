package dev.previewtunnel.testing;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * Bounded raw-socket probes for the hostile-peer tests: a client that sends half a request head and stays, an
 * honest one-shot request with its latency, and how long the server took to close a socket. Every wait has a bound.
 */
public final class RawHttp {
    private RawHttp() {
    }

    /** An answer (status -1 when none came within the bound) and the milliseconds it took. */
    public record Timed(int status, String text, long millis) {
    }

    /** Connects and sends {@code head} without the empty line that ends it: half a request head. */
    public static Socket halfHead(InetSocketAddress to, String head) throws IOException {
        Socket s = new Socket(to.getAddress(), to.getPort());
        s.getOutputStream().write(head.getBytes(StandardCharsets.US_ASCII));
        s.getOutputStream().flush();
        return s;
    }

    /** Sends a whole request ({@code head} without its final empty line, Connection: close added) and times it. */
    public static Timed request(InetSocketAddress to, String head, Duration bound) throws IOException {
        long start = System.nanoTime();
        try (Socket s = new Socket()) {
            s.connect(to, (int) bound.toMillis());
            s.setSoTimeout((int) bound.toMillis());
            s.getOutputStream().write((head + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
            byte[] all = s.getInputStream().readAllBytes();
            String text = new String(all, StandardCharsets.ISO_8859_1);
            int status = text.startsWith("HTTP/1.1 ") && text.length() >= 12
                    ? Integer.parseInt(text.substring(9, 12)) : 0;
            return new Timed(status, text, (System.nanoTime() - start) / 1_000_000);
        } catch (SocketTimeoutException e) {
            return new Timed(-1, "", (System.nanoTime() - start) / 1_000_000);
        }
    }

    /**
     * Reads {@code s} until the server closes it (EOF or reset) and returns the milliseconds since {@code since}
     * (a {@link System#nanoTime()}), or -1 if it is still open after {@code bound}. Bytes it sends are skipped.
     */
    public static long millisUntilClosed(Socket s, long since, Duration bound) throws IOException {
        s.setSoTimeout((int) Math.max(1, bound.toMillis() - (System.nanoTime() - since) / 1_000_000));
        InputStream in = s.getInputStream();
        byte[] buf = new byte[4096];
        try {
            while (in.read(buf) >= 0) {
                // drain: an answer (an error page) may come before the close
            }
        } catch (SocketTimeoutException e) {
            return -1;
        } catch (IOException reset) {
            // a reset is a close too
        }
        return (System.nanoTime() - since) / 1_000_000;
    }

    /**
     * Reads {@code in} to its end, discarding, or until it fails (a reset ends it as well); returns
     * {@link System#nanoTime()} at that moment. Bounded by the socket's read timeout.
     */
    public static long drainUntilEnd(InputStream in) {
        byte[] buffer = new byte[64 * 1024];
        try {
            while (in.read(buffer) >= 0) {
                // discard
            }
        } catch (IOException ended) {
            // reset: ended as well
        }
        return System.nanoTime();
    }
}
