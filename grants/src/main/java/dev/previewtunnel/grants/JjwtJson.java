package dev.previewtunnel.grants;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.json.JsonTrees;
import io.jsonwebtoken.io.AbstractDeserializer;
import io.jsonwebtoken.io.AbstractSerializer;

import java.io.OutputStream;
import java.io.Reader;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JJWT's JSON, through {@link JsonTrees} instead of JJWT's Jackson module, whose {@code ObjectMapper} cost the
 * gateway megabytes of idle RSS for reading a few claims (docs/performance.md, finding 41). JJWT finds both
 * through {@code META-INF/services}. What its Jackson module did and this keeps: a repeated key is refused
 * (STRICT_DUPLICATE_DETECTION), objects become insertion-ordered maps, arrays lists, integers the smallest of
 * Integer/Long/BigInteger, other numbers Doubles; JJWT's redacting suppliers are written as what they supply.
 * Stricter than it: text after the JSON value is refused instead of ignored. JjwtJsonTest compares the two.
 */
public final class JjwtJson {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private JjwtJson() {
    }

    /** JSON text to the values JJWT expects. */
    public static final class Reading extends AbstractDeserializer<Object> {
        @Override
        protected Object doDeserialize(Reader reader) throws Exception {
            return toJava(JsonTrees.parseStrict(reader));
        }
    }

    /** JJWT's maps (headers, claims, JWKs) to compact UTF-8 JSON. */
    public static final class Writing extends AbstractSerializer<Object> {
        @Override
        protected void doSerialize(Object value, OutputStream out) throws Exception {
            JsonTrees.write(toNode(value), out);
        }
    }

    static Object toJava(JsonNode node) {
        if (node.isObject()) {
            Map<String, Object> map = new LinkedHashMap<>();
            for (var property : node.properties()) {
                map.put(property.getKey(), toJava(property.getValue()));
            }
            return map;
        }
        if (node.isArray()) {
            List<Object> list = new ArrayList<>(node.size());
            for (JsonNode item : node) {
                list.add(toJava(item));
            }
            return list;
        }
        if (node.isTextual()) {
            return node.textValue();
        }
        if (node.isBoolean()) {
            return node.booleanValue();
        }
        if (node.isNumber()) {
            return node.numberValue(); // Integer, Long, BigInteger or Double, as JsonTrees read it
        }
        return null; // null, or no value at all
    }

    static JsonNode toNode(Object value) {
        if (value instanceof io.jsonwebtoken.lang.Supplier<?> supplier) {
            return toNode(supplier.get());
        }
        if (value == null) {
            return NODES.nullNode();
        }
        if (value instanceof Map<?, ?> map) {
            ObjectNode object = JsonTrees.object();
            map.forEach((k, v) -> object.set(String.valueOf(k), toNode(v)));
            return object;
        }
        if (value instanceof Collection<?> items) {
            ArrayNode array = JsonTrees.array();
            items.forEach(item -> array.add(toNode(item)));
            return array;
        }
        if (value instanceof Object[] items) {
            return toNode(Arrays.asList(items));
        }
        if (value instanceof CharSequence text) {
            return NODES.textNode(text.toString());
        }
        if (value instanceof Boolean b) {
            return NODES.booleanNode(b);
        }
        if (value instanceof Integer || value instanceof Short || value instanceof Byte) {
            return NODES.numberNode(((Number) value).intValue());
        }
        if (value instanceof Long l) {
            return NODES.numberNode(l);
        }
        if (value instanceof BigInteger i) {
            return NODES.numberNode(i);
        }
        if (value instanceof BigDecimal d) {
            return NODES.numberNode(d);
        }
        if (value instanceof Double d) {
            return NODES.numberNode(d);
        }
        if (value instanceof Float f) {
            return NODES.numberNode(f);
        }
        // JJWT converts dates, keys and certificates to strings before it writes; anything else is a new case to
        // look at, not something to print as a bean.
        throw new IllegalArgumentException("JJWT asked to write a " + value.getClass().getName());
    }
}
