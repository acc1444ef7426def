package dev.previewtunnel.ingress.proxy;

import dev.previewtunnel.mux.wire.TunnelError;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/desktop-ingress.md's table of the codes a browser can see must list exactly the codes the ingress can
 * answer (every {@link TunnelError} and the ingress's own), each with the status it is really sent with.
 */
class ErrorCodesDocumentedTest {
    private static final Path DOC = Path.of("..", "docs", "desktop-ingress.md");
    private static final Pattern ROW = Pattern.compile("^\\| `([a-z_]+)` \\| (\\d{3}) \\|");

    /** code -> status, from the rows of the "Error codes the browser can see" section. */
    private static Map<String, Integer> documented() throws Exception {
        assertTrue(Files.isRegularFile(DOC), "the ingress documentation is at " + DOC.toAbsolutePath());
        Map<String, Integer> rows = new LinkedHashMap<>();
        boolean inSection = false;
        for (String line : Files.readAllLines(DOC)) {
            if (line.startsWith("## ")) {
                inSection = line.equals("## Error codes the browser can see");
                continue;
            }
            Matcher m = ROW.matcher(line);
            if (inSection && m.find()) {
                assertEquals(null, rows.put(m.group(1), Integer.parseInt(m.group(2))), "listed twice: " + m.group(1));
            }
        }
        return rows;
    }

    /** code -> status, from the code. */
    private static Map<String, Integer> answered() {
        Map<String, Integer> codes = new TreeMap<>(ErrorPages.INGRESS_CODES);
        for (TunnelError e : TunnelError.values()) {
            codes.put(e.code(), e.httpStatus());
        }
        return codes;
    }

    @Test
    void theTableListsEveryCodeWithTheStatusItIsSentWith() throws Exception {
        Map<String, Integer> documented = documented();
        Map<String, Integer> answered = answered();
        assertEquals(answered, new TreeMap<>(documented),
                "docs/desktop-ingress.md error-code table (left: the code, right: the table)");
        System.out.printf("{\"test\":\"error_codes_documented\",\"codes\":%d}%n", documented.size());
    }

    @Test
    void revokedHasAStatusNoOtherFailureUses() {
        int revoked = TunnelError.GRANT_REVOKED.httpStatus();
        assertEquals(410, revoked);
        answered().forEach((code, status) -> assertTrue(code.equals("grant_revoked") || status != revoked,
                code + " shares grant_revoked's status " + revoked));
        assertTrue(TunnelError.GRANT_EXPIRED.httpStatus() != TunnelError.NOT_GRANTED.httpStatus());
    }
}
