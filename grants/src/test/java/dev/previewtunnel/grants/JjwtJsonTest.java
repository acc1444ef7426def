package dev.previewtunnel.grants;

import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.jsonwebtoken.io.DeserializationException;
import io.jsonwebtoken.io.Deserializer;
import io.jsonwebtoken.io.SerializationException;
import io.jsonwebtoken.io.Serializer;
import org.junit.jupiter.api.Test;

import java.io.StringReader;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.ServiceLoader;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * JJWT's JSON through JsonTrees against what JJWT's Jackson module did (an ObjectMapper with strict duplicate
 * detection reading {@code Object.class}, writing maps), as the oracle: the same Java values from random
 * documents, the same bytes from random maps, repeated keys refused. Seeded.
 */
class JjwtJsonTest {
    private static final ObjectMapper ORACLE = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();
    private final Deserializer<Object> reading = new JjwtJson.Reading();
    private final Serializer<Object> writing = new JjwtJson.Writing();

    @Test
    void jjwtFindsTheseThroughItsServiceFiles() {
        assertInstanceOf(JjwtJson.Reading.class, ServiceLoader.load(Deserializer.class).findFirst().orElseThrow());
        assertInstanceOf(JjwtJson.Writing.class, ServiceLoader.load(Serializer.class).findFirst().orElseThrow());
    }

    @Test
    void readsWhatJjwtsJacksonModuleRead() throws Exception {
        Random random = new Random(21);
        for (int i = 0; i < 2_000; i++) {
            String doc = ORACLE.writeValueAsString(randomMap(random, 0));
            assertEquals(ORACLE.readValue(doc, Object.class), reading.deserialize(new StringReader(doc)), doc);
            // Map equality ignores key order; JJWT's maps kept the document's, so the text written again must match.
            assertEquals(doc, ORACLE.writeValueAsString(reading.deserialize(new StringReader(doc))));
            assertEquals(ORACLE.readValue(doc, Object.class),
                    reading.deserialize(doc.getBytes(StandardCharsets.UTF_8)), doc);
        }
    }

    @Test
    void writesWhatJjwtsJacksonModuleWrote() throws Exception {
        Random random = new Random(22);
        for (int i = 0; i < 2_000; i++) {
            Map<String, Object> map = randomMap(random, 0);
            assertArrayEquals(ORACLE.writeValueAsBytes(map), writing.serialize(map), map::toString);
        }
    }

    @Test
    void refusesRepeatedKeysAndTrailingText() {
        for (String doc : new String[] {"{\"exp\":1,\"exp\":2}", "{\"a\":{\"k\":1,\"k\":1}}", "{\"a\":1} {}",
                "{\"a\":1"}) {
            assertThrows(DeserializationException.class, () -> reading.deserialize(new StringReader(doc)), doc);
        }
        // No value at all is null, which JJWT's own object reader refuses, as it did with Jackson's null.
        assertEquals(null, reading.deserialize(new StringReader("")));
    }

    @Test
    void writesWhatASupplierSuppliesAndRefusesUnknownTypes() {
        io.jsonwebtoken.lang.Supplier<String> secret = () -> "d-value";
        Map<String, Object> jwk = new LinkedHashMap<>();
        jwk.put("d", secret);
        jwk.put("key_ops", Set.of("sign"));
        assertEquals("{\"d\":\"d-value\",\"key_ops\":[\"sign\"]}",
                new String(writing.serialize(jwk), StandardCharsets.UTF_8));
        SerializationException e = assertThrows(SerializationException.class,
                () -> writing.serialize(Map.of("when", new java.util.Date(0))));
        assertTrue(String.valueOf(e.getMessage()).contains("java.util.Date"), e::getMessage);
    }

    private static Map<String, Object> randomMap(Random random, int depth) {
        Map<String, Object> map = new LinkedHashMap<>();
        for (int n = random.nextInt(6); n > 0; n--) {
            map.put("k" + random.nextInt(50), randomValue(random, depth + 1));
        }
        return map;
    }

    private static Object randomValue(Random random, int depth) {
        switch (depth > 3 ? 2 + random.nextInt(7) : random.nextInt(9)) {
            case 0:
                return randomMap(random, depth);
            case 1: {
                List<Object> list = new ArrayList<>();
                for (int n = random.nextInt(4); n > 0; n--) {
                    list.add(randomValue(random, depth + 1));
                }
                return list;
            }
            case 2:
                return "s" + random.nextInt() + (random.nextBoolean() ? "\u00e9\"\\" : "");
            case 3:
                return random.nextInt();
            case 4:
                return random.nextLong();
            case 5:
                return new BigInteger(80, random);
            case 6:
                return random.nextDouble() * 1e9;
            case 7:
                return random.nextBoolean();
            default:
                return null;
        }
    }
}
