package dev.previewtunnel.json;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * JsonTrees against the ObjectMapper it replaces, as the oracle: the same trees (node kinds included: IntNode and
 * LongNode are not equal) from random documents and from random mutations of them, the same failures, the same
 * bytes written. Seeded, so a failure repeats.
 */
class JsonTreesTest {
    private static final ObjectMapper ORACLE = new ObjectMapper();
    private static final ObjectMapper STRICT_ORACLE = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS).build();

    @Test
    void randomDocumentsParseAsObjectMapperParsesThem() throws Exception {
        Random random = new Random(41);
        for (int i = 0; i < 2_000; i++) {
            String text = ORACLE.writeValueAsString(randomTree(random, 0));
            assertEquals(ORACLE.readTree(text), JsonTrees.parse(text), text);
            // Node equality ignores the order of an object's keys; the text written does not.
            assertEquals(text, ORACLE.writeValueAsString(JsonTrees.parse(text)));
            assertEquals(ORACLE.readTree(text.getBytes(StandardCharsets.UTF_8)),
                    JsonTrees.parse(text.getBytes(StandardCharsets.UTF_8)), text);
        }
    }

    /** Network and file input: any byte string either fails in both or gives both the same tree. */
    @Test
    void mutatedDocumentsFailOrParseAsObjectMapperDoes() throws Exception {
        mutatedDocumentsAgainst(ORACLE, JsonTrees::parse, 4141);
    }

    /** The strict reading against a mapper with the two features it stands for. */
    @Test
    void mutatedDocumentsFailOrParseStrictlyAsAStrictObjectMapperDoes() throws Exception {
        mutatedDocumentsAgainst(STRICT_ORACLE, JsonTrees::parseStrict, 4242);
        try (java.io.StringReader reader = new java.io.StringReader("{\"a\":[1,{\"b\":2}]}")) {
            assertEquals(STRICT_ORACLE.readTree("{\"a\":[1,{\"b\":2}]}"), JsonTrees.parseStrict(reader));
        }
    }

    @Test
    void strictRefusesRepeatedKeysAndTrailingContent() throws Exception {
        for (String doc : new String[] {"{\"a\":1,\"a\":1}", "{\"o\":{\"k\":1,\"k\":2}}", "{} x", "[1] [2]",
                "{}{}", "1 2"}) {
            assertThrows(JsonProcessingException.class, () -> STRICT_ORACLE.readTree(doc), doc);
            assertThrows(JsonProcessingException.class, () -> JsonTrees.parseStrict(doc), doc);
        }
        for (String doc : new String[] {"", "  ", "{\"a\":1} \n", "null"}) {
            assertEquals(STRICT_ORACLE.readTree(doc), JsonTrees.parseStrict(doc), doc);
        }
    }

    private interface Parse {
        JsonNode parse(String text) throws JsonProcessingException;
    }

    private static void mutatedDocumentsAgainst(ObjectMapper oracle, Parse parse, long seed) throws Exception {
        Random random = new Random(seed);
        String alphabet = "{}[]:,\"\\ 0123456789.eE+-truefalsnl\u00e9\u0000";
        int failures = 0;
        for (int i = 0; i < 5_000; i++) {
            StringBuilder text = new StringBuilder(ORACLE.writeValueAsString(randomTree(random, 0)));
            for (int edits = 1 + random.nextInt(3); edits > 0; edits--) {
                int at = random.nextInt(text.length() + 1);
                switch (random.nextInt(3)) {
                    case 0 -> text.insert(at, alphabet.charAt(random.nextInt(alphabet.length())));
                    case 1 -> {
                        if (at < text.length()) {
                            text.deleteCharAt(at);
                        }
                    }
                    default -> text.setLength(at);
                }
            }
            String doc = text.toString();
            JsonNode expected;
            try {
                expected = oracle.readTree(doc);
            } catch (JsonProcessingException e) {
                failures++;
                assertThrows(JsonProcessingException.class, () -> parse.parse(doc), doc);
                continue;
            }
            assertEquals(expected, parse.parse(doc), doc);
        }
        assertTrue(failures > 500 && failures < 4_900, "mutations should both break and keep documents: " + failures);
    }

    /** Bytes, not text: random byte edits (any value, so also no valid UTF-8 and encodings Jackson guesses). */
    @Test
    void mutatedBytesFailOrParseAsObjectMapperDoes() throws Exception {
        Random random = new Random(4343);
        int failures = 0;
        for (int i = 0; i < 5_000; i++) {
            byte[] bytes = ORACLE.writeValueAsBytes(randomTree(random, 0));
            for (int edits = 1 + random.nextInt(3); edits > 0 && bytes.length > 0; edits--) {
                bytes[random.nextInt(bytes.length)] = (byte) random.nextInt(256);
            }
            if (random.nextInt(10) == 0 && bytes.length > 3) { // a leading 00 00 00: Jackson guesses UTF-32
                bytes[0] = 0;
                bytes[1] = 0;
                bytes[2] = 0;
            }
            byte[] doc = bytes;
            JsonNode expected;
            try {
                expected = ORACLE.readTree(doc);
            } catch (java.io.IOException e) { // CharConversionException is not a JsonProcessingException
                failures++;
                assertThrows(JsonProcessingException.class, () -> JsonTrees.parse(doc));
                assertThrows(JsonProcessingException.class, () -> JsonTrees.parseStrict(doc));
                continue;
            }
            assertEquals(expected, JsonTrees.parse(doc));
        }
        assertTrue(failures > 500 && failures < 4_900, "edits should both break and keep documents: " + failures);
        JsonProcessingException e = assertThrows(JsonProcessingException.class,
                () -> JsonTrees.parseStrict(new byte[] {0, 0, 0, '{', 0x7b, 0x22, 0x61, 0x22}));
        assertEquals("not JSON text in any encoding Jackson reads", e.getOriginalMessage());
    }

    @Test
    void edgesAsObjectMapper() throws Exception {
        for (String doc : new String[] {"", "   ", "null", "{} trailing", "[1] [2]", "{\"a\":1,\"a\":2}", "2147483648",
                "9223372036854775808", "-0", "1e400", "1.0", "\"\\u0000\"", "{\"a\":[[],{}]}"}) {
            assertEquals(ORACLE.readTree(doc), JsonTrees.parse(doc), doc);
        }
        String deep = "[".repeat(5_000) + "]".repeat(5_000);
        assertThrows(JsonProcessingException.class, () -> ORACLE.readTree(deep));
        assertThrows(JsonProcessingException.class, () -> JsonTrees.parse(deep));
        for (String doc : new String[] {"{", "[1,", "{\"a\" 1}", "tru", "NaN", "'a'", "{a:1}"}) {
            assertThrows(JsonProcessingException.class, () -> ORACLE.readTree(doc), doc);
            assertThrows(JsonProcessingException.class, () -> JsonTrees.parse(doc), doc);
        }
    }

    @Test
    void writesTheBytesObjectMapperWrites() throws Exception {
        Random random = new Random(7);
        for (int i = 0; i < 2_000; i++) {
            JsonNode tree = randomTree(random, 0);
            assertEquals(ORACLE.writeValueAsString(tree), JsonTrees.write(tree));
            assertArrayEquals(ORACLE.writeValueAsBytes(tree), JsonTrees.writeBytes(tree));
            assertEquals(ORACLE.writerWithDefaultPrettyPrinter().writeValueAsString(tree), JsonTrees.writePretty(tree));
        }
    }

    @Test
    void writesTheOtherScalarKindsAsObjectMapperDoes() throws Exception {
        ObjectNode tree = JsonTrees.object();
        tree.put("f", 1.1f).put("s", (short) 7).put("d", new java.math.BigDecimal("1.50")).put("b", (byte) 3);
        tree.set("m", com.fasterxml.jackson.databind.node.MissingNode.getInstance());
        tree.putArray("a").add(1e300).add(-0.0).add(Long.MIN_VALUE);
        assertEquals(ORACLE.writeValueAsString(tree), JsonTrees.write(tree));
        assertThrows(IllegalArgumentException.class,
                () -> JsonTrees.write(ORACLE.getNodeFactory().binaryNode(new byte[] {1})));
        assertThrows(IllegalArgumentException.class,
                () -> JsonTrees.write(ORACLE.getNodeFactory().pojoNode(new Object())));
    }

    @Test
    void buildsEmptyContainers() {
        assertEquals("{}", JsonTrees.write(JsonTrees.object()));
        assertEquals("[]", JsonTrees.write(JsonTrees.array()));
        assertEquals("{\"k\":\"v\",\"n\":[1,true,null]}", JsonTrees.write(JsonTrees.object().put("k", "v")
                .set("n", JsonTrees.array().add(1).add(true).addNull())));
    }

    private static JsonNode randomTree(Random random, int depth) {
        int kind = depth > 4 ? 2 + random.nextInt(7) : random.nextInt(9);
        switch (kind) {
            case 0 -> {
                ObjectNode o = ORACLE.createObjectNode();
                for (int n = random.nextInt(5); n > 0; n--) {
                    o.set(randomString(random), randomTree(random, depth + 1));
                }
                return o;
            }
            case 1 -> {
                ArrayNode a = ORACLE.createArrayNode();
                for (int n = random.nextInt(5); n > 0; n--) {
                    a.add(randomTree(random, depth + 1));
                }
                return a;
            }
            case 2 -> {
                return ORACLE.getNodeFactory().textNode(randomString(random));
            }
            case 3 -> {
                return ORACLE.getNodeFactory().numberNode(random.nextInt());
            }
            case 4 -> {
                return ORACLE.getNodeFactory().numberNode(random.nextLong());
            }
            case 5 -> {
                return ORACLE.getNodeFactory().numberNode(new BigInteger(96, random).negate());
            }
            case 6 -> {
                double d = random.nextBoolean() ? random.nextDouble() * 1e6 : random.nextGaussian() * 1e-300;
                return ORACLE.getNodeFactory().numberNode(d);
            }
            case 7 -> {
                return ORACLE.getNodeFactory().booleanNode(random.nextBoolean());
            }
            default -> {
                return ORACLE.getNodeFactory().nullNode();
            }
        }
    }

    private static String randomString(Random random) {
        StringBuilder s = new StringBuilder();
        for (int n = random.nextInt(8); n > 0; n--) {
            int pick = random.nextInt(10);
            s.append(pick < 6 ? (char) ('a' + random.nextInt(26))
                    : pick < 7 ? (char) random.nextInt(0x20)
                    : pick < 8 ? "\"\\/".charAt(random.nextInt(3))
                    : pick < 9 ? (char) (0xa0 + random.nextInt(0x2000)) : "\ud83d\ude00");
        }
        return s.toString();
    }

    @Test
    void randomTreesCoverEveryKind() {
        Random random = new Random(41);
        boolean[] seen = new boolean[9];
        for (int i = 0; i < 500; i++) {
            JsonNode n = randomTree(random, 0);
            seen[n.isObject() ? 0 : n.isArray() ? 1 : n.isTextual() ? 2 : n.isInt() ? 3 : n.isLong() ? 4
                    : n.isBigInteger() ? 5 : n.isDouble() ? 6 : n.isBoolean() ? 7 : n.isNull() ? 8 : -1] = true;
        }
        for (int k = 0; k < seen.length; k++) {
            if (!seen[k]) {
                fail("kind " + k + " never generated");
            }
        }
    }
}
