package dev.previewtunnel.sampleapp;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RawEchoServerTest {
    private static final int TIMEOUT_MS = 30_000;
    private RawEchoServer server;

    @BeforeEach
    void start() {
        server = RawEchoServer.start("127.0.0.1", 0);
    }

    @AfterEach
    void stop() {
        server.close();
    }

    @Test
    void answersWithByteCountAfterHalfCloseThenCloses() throws Exception {
        byte[] data = new byte[1_000_003];
        new Random(1).nextBytes(data);
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(TIMEOUT_MS);
            OutputStream out = s.getOutputStream();
            out.write(data);
            out.flush();
            s.shutdownOutput();
            InputStream in = s.getInputStream();
            String reply = new String(in.readAllBytes(), StandardCharsets.US_ASCII);
            assertEquals("1000003\n", reply);
        }
        assertEquals(1, server.acceptedConnections());
    }

    @Test
    void emptyStreamAnswersZero() throws Exception {
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(TIMEOUT_MS);
            s.shutdownOutput();
            assertEquals("0\n", new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII));
        }
    }

    @Test
    void severalConnectionsAreCountedIndependently() throws Exception {
        for (int i = 1; i <= 5; i++) {
            try (Socket s = new Socket("127.0.0.1", server.port())) {
                s.setSoTimeout(TIMEOUT_MS);
                s.getOutputStream().write(new byte[i * 10]);
                s.shutdownOutput();
                assertEquals((i * 10) + "\n", new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII));
            }
        }
        assertTrue(server.awaitAcceptedConnections(5, Duration.ofSeconds(5)));
        assertEquals(5, server.acceptedConnections());
        assertEquals(5, server.completedExchanges());
        server.close();
        server.close();
    }
}
