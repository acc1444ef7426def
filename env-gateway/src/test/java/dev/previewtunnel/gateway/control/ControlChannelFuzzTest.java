package dev.previewtunnel.gateway.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.gateway.policy.TargetPolicy;
import dev.previewtunnel.grants.KeyDirectory;
import dev.previewtunnel.local.audit.AuditLog;
import dev.previewtunnel.testing.FuzzRunner;
import dev.previewtunnel.testing.LoggedSecrets;
import dev.previewtunnel.testing.LoggedWarnings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Property/fuzz test of the stdio control channel's input: each case is a few request lines (valid requests,
 * mutated ones, random bytes, now and then one over the line limit, LF or CRLF, the last one maybe unterminated)
 * fed through the channel's own read-answer loop. Properties: exactly one response line per request line, each a
 * JSON object with an id and exactly one outcome; no exception escapes; an error never carries a JWT (nor anything
 * looking like one) and is never "internal" for input alone. Bounded: {@code -Dfuzz.control.cases} (default
 * 5,000); {@code -Dfuzz.seed=S -Dfuzz.case=N} replays one case.
 */
class ControlChannelFuzzTest {
    private static final FuzzRunner.Settings DEFAULTS = FuzzRunner.Settings.fromProperties("control", 0x5EED_C0DEL);
    static final FuzzRunner.Settings RUN = new FuzzRunner.Settings(DEFAULTS.name(), DEFAULTS.seed(),
            Integer.getInteger("fuzz.control.cases", 5_000), 0, DEFAULTS.threads(), DEFAULTS.hardLimit(),
            DEFAULTS.onlyCase());
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String JWT_LIKE = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl";
    private static final String JSON_BYTES = " {}[]\":,\\0123456789eE.-tfnu";
    private static final Set<String> OUTCOMES = Set.of("error", "token", "grant", "ports", "pong");
    private static final Set<String> CODES = Set.of("bad_request", "invalid_target", "ttl_too_long", "unknown_op");
    private static final List<String> VALID = List.of(
            "{\"id\":1,\"op\":\"ping\"}",
            "{\"id\":2,\"op\":\"token\",\"ttl\":\"5m\"}",
            "{\"id\":3,\"op\":\"grant\",\"session\":\"s-1\",\"target\":\"localhost:5173\",\"ttl\":\"90s\"}",
            "{\"id\":\"x\",\"op\":\"ports\"}",
            "{\"id\":4,\"op\":\"grant\",\"session\":\"s\",\"target\":\"[::1]:8080\"}",
            "{\"op\":\"token\"}");
    private static final List<String> VALUES = List.of("null", "true", "0", "-1", "1e308", "99999999999999999999999",
            "\"\"", "\" \"", "\"" + JWT_LIKE + "\"", "[]", "{}", "[[[[[[]]]]]]", "{\"op\":\"ping\"}", "\"\\u0000\"",
            "\"localhost:5173\"", "\"127.0.0.1:0\"", "\"10.0.0.1:22\"", "\"25h\"", "\"PT0.1S\"", "\"9999999999999d\"",
            "\"ping\"", "\"grant\"", "\"token\"", "\"\u00e9\u4e2d\ud83d\ude00\"", "\"" + "a".repeat(5000) + "\"");

    @TempDir
    Path tmp;

    /** One case: the input bytes and how many lines they hold. */
    record Case(long index, byte[] input, int lines) {
    }

    @Test
    void everyLineGetsExactlyOneSafeResponse() throws Exception {
        KeyDirectory keys = KeyDirectory.init(tmp.resolve("keys"));
        // In place of the audit logger: the cases' grant_issued lines are counted, not printed. Whether a JWT can
        // reach them is ControlDispatcherTest's (a request may name any session, JWT-like ones included).
        LoggedSecrets audit = LoggedSecrets.attach(AuditLog.LOGGER);
        LoggedWarnings warnings = LoggedWarnings.attach();
        AtomicLong minted = new AtomicLong();
        FuzzRunner runner = new FuzzRunner(RUN);
        try {
            if (RUN.replaying()) {
                runner.replay(() -> new Worker(keys, minted));
            } else {
                runner.runAll(() -> new Worker(keys, minted));
            }
        } finally {
            warnings.detach();
            audit.detach();
        }
        assertTrue(warnings.seen().isEmpty(), () -> "warnings logged:\n" + String.join("\n", warnings.seen()));
        assertTrue(RUN.replaying() || minted.get() > 0 && audit.lines() >= minted.get(),
                "some cases minted a token or a grant, each audited");
    }

    private static final class Worker implements FuzzRunner.Worker<Case> {
        private final ControlDispatcher dispatcher;
        private final AtomicLong minted;

        Worker(KeyDirectory keys, AtomicLong minted) {
            this.dispatcher = new ControlDispatcher(new ControlIssuer("env-1", keys::signingKey,
                    Duration.ofMinutes(15), TargetPolicy.loopbackOnly(), new AuditLog("gateway"), Clock.systemUTC()),
                    List::of);
            this.minted = minted;
        }

        @Override
        public Case generate(long index, long seed) {
            Random r = new Random(seed);
            ByteArrayOutputStream input = new ByteArrayOutputStream();
            int lines = 1 + r.nextInt(4);
            for (int i = 0; i < lines; i++) {
                byte[] line = switch (r.nextInt(10)) {
                    case 0, 1 -> VALID.get(r.nextInt(VALID.size())).getBytes(StandardCharsets.UTF_8);
                    case 2, 3 -> withValue(r);
                    case 4 -> randomBytes(r);
                    default -> mutated(r);
                };
                if (r.nextInt(2000) == 0) {
                    line = ("{\"id\":1,\"op\":\"ping\",\"pad\":\"" + "p".repeat(StdioControlChannel.MAX_LINE_BYTES)
                            + "\"}").getBytes(StandardCharsets.UTF_8);
                }
                input.writeBytes(line);
                boolean last = i == lines - 1;
                if (!last || r.nextInt(4) != 0 || line.length == 0) {
                    input.writeBytes(r.nextBoolean() ? new byte[] {'\n'} : new byte[] {'\r', '\n'});
                }
            }
            return new Case(index, input.toByteArray(), lines);
        }

        /** A valid request with one field's value, or a new field, set to an odd value. */
        private static byte[] withValue(Random r) {
            String request = VALID.get(r.nextInt(VALID.size()));
            String field = List.of("id", "op", "ttl", "session", "target", "extra").get(r.nextInt(6));
            String value = VALUES.get(r.nextInt(VALUES.size()));
            String replaced = request.replaceFirst("\"" + field + "\":(\"[^\"]*\"|[^,}]*)",
                    "\"" + field + "\":" + java.util.regex.Matcher.quoteReplacement(value));
            if (replaced.equals(request)) {
                replaced = "{\"" + field + "\":" + value + "," + request.substring(1);
            }
            return replaced.getBytes(StandardCharsets.UTF_8);
        }

        /** Random bytes, LF excluded (each case's lines are counted by its LFs). */
        private static byte[] randomBytes(Random r) {
            byte[] b = new byte[r.nextInt(200)];
            r.nextBytes(b);
            for (int i = 0; i < b.length; i++) {
                if (b[i] == '\n') {
                    b[i] = ' ';
                }
            }
            return b;
        }

        /** A valid request with a few bytes flipped, inserted, deleted or duplicated. */
        private static byte[] mutated(Random r) {
            List<Byte> b = new ArrayList<>();
            for (byte x : VALID.get(r.nextInt(VALID.size())).getBytes(StandardCharsets.UTF_8)) {
                b.add(x);
            }
            int edits = 1 + r.nextInt(4);
            for (int e = 0; e < edits && !b.isEmpty(); e++) {
                int at = r.nextInt(b.size());
                byte random = (byte) (r.nextInt(4) == 0 ? r.nextInt(256)
                        : JSON_BYTES.charAt(r.nextInt(JSON_BYTES.length())));
                if (random == '\n') {
                    random = '{';
                }
                switch (r.nextInt(4)) {
                    case 0 -> b.set(at, random);
                    case 1 -> b.add(at, random);
                    case 2 -> b.subList(at, Math.min(b.size(), at + 1 + r.nextInt(8))).clear();
                    default -> b.addAll(at, new ArrayList<>(b.subList(at, Math.min(b.size(), at + 1 + r.nextInt(8)))));
                }
            }
            byte[] out = new byte[b.size()];
            for (int i = 0; i < out.length; i++) {
                out[i] = b.get(i);
            }
            return out;
        }

        @Override
        public void run(Case c, boolean verbose) throws Exception {
            ByteArrayOutputStream output = new ByteArrayOutputStream();
            StdioControlChannel channel = new StdioControlChannel(new ByteArrayInputStream(c.input()), output,
                    dispatcher, () -> { });
            channel.answerUntilEnd();
            String text = output.toString(StandardCharsets.UTF_8);
            if (verbose) {
                System.out.println("[fuzz] responses:\n" + text);
            }
            assertTrue(text.endsWith("\n"), text);
            String[] responses = text.substring(0, text.length() - 1).split("\n", -1);
            assertEquals(c.lines(), responses.length, text);
            for (String line : responses) {
                JsonNode response = JSON.readTree(line);
                assertTrue(response.isObject() && response.has("id"), line);
                List<String> outcomes = new ArrayList<>();
                response.fieldNames().forEachRemaining(f -> {
                    if (OUTCOMES.contains(f)) {
                        outcomes.add(f);
                    }
                });
                assertEquals(1, outcomes.size(), line);
                if (response.has("error")) {
                    assertTrue(CODES.contains(response.get("error").asText()), line);
                    assertTrue(response.get("message").isTextual(), line);
                    assertEquals(3, response.size(), line);
                    assertFalse(line.contains("eyJ"), () -> "a JWT or part of one in an error: " + line);
                } else if (response.has("token") || response.has("grant")) {
                    minted.incrementAndGet();
                }
            }
        }

        @Override
        public String describe(Case c) {
            return "case " + c.index() + " (" + c.lines() + " lines): " + (c.input().length > 2000
                    ? c.input().length + " bytes" : HexFormat.of().formatHex(c.input()));
        }

        @Override
        public void close() {
        }
    }
}
