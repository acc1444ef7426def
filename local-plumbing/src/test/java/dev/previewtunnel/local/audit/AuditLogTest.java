package dev.previewtunnel.local.audit;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The streamed audit line is byte for byte what the Jackson tree it replaced printed: field order, a repeated key
 * replaced in place, null strings left out, numbers unquoted, escapes and non-ASCII as Jackson writes them.
 */
class AuditLogTest {
    private enum E implements AuditEvent {
        STREAM_OPENED;

        @Override
        public String wireName() {
            return AuditEvent.wireName(this);
        }
    }

    @Test
    void sameBytesAsTheTreeItReplaced() throws Exception {
        String odd = "a \"b\" \\ c\n\t\u0001 é ✓ \uD83D\uDE00 </script>";
        AuditLog.Event line = new AuditLog("gateway").event(E.STREAM_OPENED)
                .put("conn", "c-1")
                .put("stream", "3")
                .put("target", null)
                .put("quoted", odd)
                .put("bytes", 123456789012L)
                .put("negative", -1)
                .put("conn", "c-2");
        String streamed = line.toJson();

        ObjectMapper json = new ObjectMapper();
        String ts = json.readTree(streamed).get("ts").asText();
        ObjectNode tree = json.createObjectNode();
        tree.put("ts", ts);
        tree.put("side", "gateway");
        tree.put("event", E.STREAM_OPENED.wireName());
        tree.put("conn", "c-1");
        tree.put("stream", "3");
        tree.put("quoted", odd);
        tree.put("bytes", 123456789012L);
        tree.put("negative", -1L);
        tree.put("conn", "c-2");
        assertEquals(tree.toString(), streamed);
        assertEquals(java.time.Instant.parse(ts).toString(), ts, "ts stays Instant.toString()");
    }
}
