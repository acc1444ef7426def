package dev.previewtunnel.spikes.chain;

import dev.previewtunnel.ingress.session.BrowserSession;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Random;

/**
 * A browser connection to the proxy spoken byte by byte over a blocking socket, for what the JDK client will not
 * send (hop-by-hop headers, an absolute-form WebSocket upgrade): a request head, the response head, and minimal
 * WebSocket framing (RFC 6455: the client masks, the server does not).
 */
final class RawProxySocket implements AutoCloseable {
    private final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;
    private final Random masks = new Random(42);

    RawProxySocket(InetSocketAddress proxy) throws IOException {
        socket = new Socket();
        socket.connect(proxy, 10_000);
        socket.setSoTimeout(20_000); // a read that never completes fails the test instead of hanging it
        in = new DataInputStream(socket.getInputStream());
        out = socket.getOutputStream();
    }

    static String proxyAuthorization(BrowserSession session) {
        return "Basic " + Base64.getEncoder().encodeToString(
                (session.username() + ":" + session.password()).getBytes(StandardCharsets.UTF_8));
    }

    /** Sends a request head: the request line and the headers as given, each {@code "Name: value"}. */
    void sendHead(String requestLine, String... headers) throws IOException {
        StringBuilder head = new StringBuilder(requestLine).append("\r\n");
        for (String h : headers) {
            head.append(h).append("\r\n");
        }
        head.append("\r\n");
        out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
    }

    /** Reads a response head up to its blank line: the status line first, then the header lines. */
    String readHead() throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        int matched = 0;
        byte[] end = {'\r', '\n', '\r', '\n'};
        while (matched < 4) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("connection closed inside a response head: " + head);
            }
            head.write(b);
            matched = b == end[matched] ? matched + 1 : (b == '\r' ? 1 : 0);
        }
        return head.toString(StandardCharsets.ISO_8859_1);
    }

    byte[] readExactly(int n) throws IOException {
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }

    /** Sends one final, masked WebSocket frame. */
    void sendFrame(int opcode, byte[] payload) throws IOException {
        ByteArrayOutputStream f = new ByteArrayOutputStream();
        f.write(0x80 | opcode);
        int n = payload.length;
        if (n < 126) {
            f.write(0x80 | n);
        } else if (n <= 0xffff) {
            f.write(0x80 | 126);
            f.write(n >>> 8);
            f.write(n);
        } else {
            f.write(0x80 | 127);
            for (int shift = 56; shift >= 0; shift -= 8) {
                f.write((int) ((long) n >>> shift));
            }
        }
        byte[] mask = new byte[4];
        masks.nextBytes(mask);
        f.write(mask);
        for (int i = 0; i < n; i++) {
            f.write(payload[i] ^ mask[i & 3]);
        }
        out.write(f.toByteArray());
        out.flush();
    }

    /** A server frame: its opcode and payload. */
    record Frame(int opcode, boolean fin, byte[] payload) {
    }

    Frame readFrame() throws IOException {
        int b0 = in.readUnsignedByte();
        int b1 = in.readUnsignedByte();
        if ((b1 & 0x80) != 0) {
            throw new IOException("the server masked a frame");
        }
        long n = b1 & 0x7f;
        if (n == 126) {
            n = in.readUnsignedShort();
        } else if (n == 127) {
            n = in.readLong();
        }
        return new Frame(b0 & 0x0f, (b0 & 0x80) != 0, readExactly((int) n));
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
