package dev.previewtunnel.ingress.ssh;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class OutputTailTest {
    @TempDir
    Path dir;

    @Test
    void keepsTheLastBytesAndQuotesTheLastLinesReadably() throws Exception {
        OutputTail tail = new OutputTail(64, null);
        String text = "old line that scrolls away\n".repeat(10)
                + "{\"level\":\"ERROR\",\"formattedMessage\":\"bind failed\",\"threadName\":\"main\"}\n"
                + "last\u0007 words\n"
                + "Warning: Permanently added '[127.0.0.1]:2222' (ED25519) to the list of known hosts.\n";
        tail.drain(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)), "t");
        tail.done().get(5, TimeUnit.SECONDS);
        assertEquals(64, tail.text().length());
        assertTrue(text.endsWith(tail.text()));
        OutputTail big = new OutputTail(4096, null);
        big.append(text.getBytes(StandardCharsets.UTF_8), text.length());
        assertEquals("ERROR bind failed / last words", big.lastLines(40), "ssh's accept-new note is left out");
    }

    @Test
    void theLogFileIsOwnerOnlyAndRotatedPastItsLimit() throws Exception {
        Path log = dir.resolve("remote-gateway.log");
        OutputTail tail = new OutputTail(16, log);
        byte[] chunk = "x".repeat(300 * 1024).getBytes(StandardCharsets.US_ASCII);
        for (int i = 0; i < 5; i++) {
            tail.append(chunk, chunk.length);
        }
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(log)));
        Path older = dir.resolve("remote-gateway.log.1");
        assertEquals(3L * chunk.length, Files.size(older), "the first 900 KiB rotated away when 1 MiB was passed");
        assertEquals(2L * chunk.length, Files.size(log));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(older)));
    }
}
