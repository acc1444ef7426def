package dev.previewtunnel.ingress.status;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

class FailureWordsTest {
    @Test
    void aConnectFailuresTextBecomesWords() {
        assertEquals("the gateway refused the connection: it is not running, or the way to it is down",
                FailureWords.of("cannot reach gateway 127.0.0.1:1: finishConnect(..) failed with error(-111): "
                        + "Connection refused: /127.0.0.1:1"));
        assertEquals("the gateway did not answer in time", FailureWords.of("connection timed out: /10.0.0.1:443"));
        assertEquals("the connection failed (the ingress log has the details)",
                FailureWords.of("java.lang.IllegalStateException: something odd"));
        assertNull(FailureWords.of(null));
    }
}
