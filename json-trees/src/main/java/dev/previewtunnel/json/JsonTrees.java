package dev.previewtunnel.json;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.BigIntegerNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.Reader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.io.Writer;

/**
 * Jackson trees read and written without an {@code ObjectMapper}: the tokens come from jackson-core's parser and go
 * out through its generator; only the steps between tokens and nodes are here. Why: constructing an
 * {@code ObjectMapper} loads ~500 classes (its date format pulls in the JDK's locale and calendar providers):
 * 7.9 MiB of RSS in an otherwise idle JVM that builds the same trees without one, 3.5-5 MiB of each idle program
 * (docs/performance.md, finding 41).
 *
 * <p>{@link #parse} gives what {@code ObjectMapper.readTree} gives with its defaults (JsonTreesTest compares them on
 * random and mutated documents): the first value is read and what follows it ignored, a repeated key keeps its last
 * value, integers become the smallest of int/long/BigInteger nodes, other numbers doubles, empty input a
 * {@link MissingNode}. {@link #parseStrict} is for input whose meaning a second key or trailing text could change
 * (grants' headers, the control protocol, the revocation file): both are refused. {@link #write} writes what
 * {@code writeValueAsString} writes.
 *
 * <p>{@code JsonNode.toString()} builds an {@code ObjectMapper} of its own: write with {@link #write} instead.
 */
public final class JsonTrees {
    /** Default limits (nesting depth, string and number lengths), as an {@code ObjectMapper} of its own has. */
    private static final JsonFactory FACTORY = new JsonFactory();
    private static final JsonFactory STRICT = JsonFactory.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private JsonTrees() {
    }

    public static ObjectNode object() {
        return NODES.objectNode();
    }

    public static ArrayNode array() {
        return NODES.arrayNode();
    }

    /** The first JSON value in {@code text}; a {@link MissingNode} when there is none. */
    public static JsonNode parse(String text) throws JsonProcessingException {
        return read(() -> FACTORY.createParser(text), false);
    }

    /** The first JSON value in UTF-8 (or UTF-16/32, detected as Jackson does) {@code bytes}. */
    public static JsonNode parse(byte[] bytes) throws JsonProcessingException {
        return read(() -> FACTORY.createParser(bytes), false);
    }

    /**
     * At most one JSON value: a repeated key in any object, or anything but whitespace after the value, is an error
     * (an {@code ObjectMapper} with STRICT_DUPLICATE_DETECTION and FAIL_ON_TRAILING_TOKENS); empty input a
     * {@link MissingNode}.
     */
    public static JsonNode parseStrict(String text) throws JsonProcessingException {
        return read(() -> STRICT.createParser(text), true);
    }

    /** {@link #parseStrict(String)} of UTF-8 (or UTF-16/32) {@code bytes}. */
    public static JsonNode parseStrict(byte[] bytes) throws JsonProcessingException {
        return read(() -> STRICT.createParser(bytes), true);
    }

    /** {@link #parseStrict(String)} of what {@code reader} gives; closes it, as {@code ObjectMapper.readValue} does. */
    public static JsonNode parseStrict(Reader reader) throws IOException {
        try (JsonParser p = STRICT.createParser(reader)) {
            return readAll(p, true);
        }
    }

    private interface ParserSource {
        JsonParser open() throws IOException;
    }

    private static JsonNode read(ParserSource source, boolean strict) throws JsonProcessingException {
        try (JsonParser p = source.open()) {
            return readAll(p, strict);
        } catch (JsonProcessingException e) {
            throw e;
        } catch (IOException e) {
            // No I/O on a String or byte array: this is bytes in no encoding Jackson reads (CharConversionException,
            // e.g. a UTF-32 guess). A parse error like any other, without the exception's message, which quotes them.
            throw new JsonParseException(null, "not JSON text in any encoding Jackson reads");
        }
    }

    /** Compact, as {@code ObjectMapper.writeValueAsString} writes it. */
    public static String write(JsonNode node) {
        StringWriter out = new StringWriter(128);
        write(node, out, false);
        return out.toString();
    }

    /** Indented with Jackson's default pretty printer, as {@code writerWithDefaultPrettyPrinter()} writes it. */
    public static String writePretty(JsonNode node) {
        StringWriter out = new StringWriter(256);
        write(node, out, true);
        return out.toString();
    }

    /** Compact UTF-8. */
    public static byte[] writeBytes(JsonNode node) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(128);
        try {
            write(node, out);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a byte-array sink does no I/O
        }
        return out.toByteArray();
    }

    /** Compact UTF-8 into {@code out}, which stays open. */
    public static void write(JsonNode node, OutputStream out) throws IOException {
        try (JsonGenerator g = FACTORY.createGenerator(out).disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET)) {
            write(node, g);
        }
    }

    private static void write(JsonNode node, Writer out, boolean pretty) {
        try (JsonGenerator g = FACTORY.createGenerator(out)) {
            if (pretty) {
                g.useDefaultPrettyPrinter();
            }
            write(node, g);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a StringWriter does no I/O
        }
    }

    /**
     * A node's own {@code serialize} needs a serializer provider (an ObjectMapper's), so the walk is here, each kind
     * written as the provider's defaults write it (JsonTreesTest compares the bytes). Binary and POJO nodes are not
     * written: none of the programs builds them, and they fail here rather than print something else.
     */
    private static void write(JsonNode node, JsonGenerator g) throws IOException {
        if (node.isObject()) {
            g.writeStartObject();
            for (var property : node.properties()) {
                g.writeFieldName(property.getKey());
                write(property.getValue(), g);
            }
            g.writeEndObject();
        } else if (node.isArray()) {
            g.writeStartArray();
            for (JsonNode item : node) {
                write(item, g);
            }
            g.writeEndArray();
        } else if (node.isTextual()) {
            g.writeString(node.textValue());
        } else if (node.isNumber()) {
            switch (node.numberType()) {
                case INT -> g.writeNumber(node.intValue());
                case LONG -> g.writeNumber(node.longValue());
                case BIG_INTEGER -> g.writeNumber(node.bigIntegerValue());
                case FLOAT -> g.writeNumber(node.floatValue());
                case BIG_DECIMAL -> g.writeNumber(node.decimalValue());
                default -> g.writeNumber(node.doubleValue());
            }
        } else if (node.isBoolean()) {
            g.writeBoolean(node.booleanValue());
        } else if (node.isNull() || node.isMissingNode()) {
            g.writeNull();
        } else {
            throw new IllegalArgumentException("JsonTrees writes no " + node.getNodeType() + " node");
        }
    }

    private static JsonNode readAll(JsonParser p, boolean strict) throws IOException {
        JsonToken first = p.nextToken();
        if (first == null) {
            return MissingNode.getInstance();
        }
        JsonNode value = value(p, first);
        if (strict && p.nextToken() != null) {
            throw new JsonParseException(p, "trailing content after the JSON value");
        }
        return value;
    }

    /** Recursion is bounded by the parser's nesting limit (StreamReadConstraints), which it enforces itself. */
    private static JsonNode value(JsonParser p, JsonToken token) throws IOException {
        if (token == null) {
            throw new JsonParseException(p, "unexpected end of input");
        }
        switch (token) {
            case START_OBJECT: {
                ObjectNode object = NODES.objectNode();
                for (String name = p.nextFieldName(); name != null; name = p.nextFieldName()) {
                    object.set(name, value(p, p.nextToken()));
                }
                return object;
            }
            case START_ARRAY: {
                ArrayNode array = NODES.arrayNode();
                for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
                    array.add(value(p, t));
                }
                return array;
            }
            case VALUE_STRING:
                return TextNode.valueOf(p.getText());
            case VALUE_NUMBER_INT:
                switch (p.getNumberType()) {
                    case INT:
                        return IntNode.valueOf(p.getIntValue());
                    case LONG:
                        return LongNode.valueOf(p.getLongValue());
                    default:
                        return BigIntegerNode.valueOf(p.getBigIntegerValue());
                }
            case VALUE_NUMBER_FLOAT:
                return DoubleNode.valueOf(p.getDoubleValue());
            case VALUE_TRUE:
                return BooleanNode.TRUE;
            case VALUE_FALSE:
                return BooleanNode.FALSE;
            case VALUE_NULL:
                return NullNode.getInstance();
            default:
                throw new JsonParseException(p, "unexpected token " + token);
        }
    }
}
