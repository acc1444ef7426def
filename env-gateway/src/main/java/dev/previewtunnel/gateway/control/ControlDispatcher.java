package dev.previewtunnel.gateway.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.cli.Converters;
import dev.previewtunnel.gateway.control.ControlError.Code;
import dev.previewtunnel.gateway.ports.LoopbackListeners;
import dev.previewtunnel.gateway.ports.PortsJson;
import dev.previewtunnel.json.JsonTrees;
import dev.previewtunnel.mux.wire.Authority;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

/**
 * Answers one request line of the stdio control channel (docs/operations.md, "The stdio control channel"): parses
 * it, runs its op and returns the response object. Never throws: every failure is an error response, with the
 * request's id when it had a usable one. Unknown fields are ignored, so a newer desktop can add some.
 */
public final class ControlDispatcher {
    private static final Logger log = LoggerFactory.getLogger(ControlDispatcher.class);
    /**
     * A grant carries its session: a longer one would make a grant over the length any gateway reads
     * ({@code VerifierPolicy.DEFAULT_MAX_TOKEN_LENGTH}, 8,192), minted but refused at every stream.
     */
    static final int MAX_SESSION_CHARS = 1024;

    /** This machine's loopback listeners of this user ({@code ports}); may fail where /proc/net is missing. */
    @FunctionalInterface
    public interface PortsSource {
        List<LoopbackListeners.Port> ports() throws IOException;
    }

    private final ControlIssuer issuer;
    private final PortsSource ports;

    public ControlDispatcher(ControlIssuer issuer, PortsSource ports) {
        this.issuer = issuer;
        this.ports = ports;
    }

    /** The response to a line longer than the channel accepts (its content was never kept). */
    ObjectNode overlong(int maxBytes) {
        return error(NullNode.instance, Code.BAD_REQUEST, "request line longer than " + maxBytes + " bytes");
    }

    /** The response to one request line (UTF-8 JSON, without its line terminator). */
    ObjectNode answer(byte[] line) {
        JsonNode request;
        try {
            // Repeated keys and trailing values are refused: a line must mean one thing, not what the last key says.
            request = JsonTrees.parseStrict(line);
        } catch (IOException | RuntimeException e) {
            // Never the parser's message: it quotes the input.
            return error(NullNode.instance, Code.BAD_REQUEST, "not valid JSON");
        }
        if (request == null || !request.isObject()) {
            return error(NullNode.instance, Code.BAD_REQUEST, "a request is one JSON object per line");
        }
        JsonNode id = request.path("id");
        if (id.isMissingNode() || id.isNull()) {
            id = NullNode.instance;
        } else if (!id.isNumber() && !id.isTextual()) {
            return error(NullNode.instance, Code.BAD_REQUEST, "id must be a number or a string");
        }
        try {
            ObjectNode response = JsonTrees.object().set("id", id);
            return run(request, response);
        } catch (ControlError e) {
            return error(id, e.code(), e.getMessage());
        } catch (RuntimeException e) {
            log.warn("control request failed: {}", e.getClass().getName());
            return error(id, Code.INTERNAL, "internal error; see the gateway's log");
        }
    }

    private ObjectNode run(JsonNode request, ObjectNode response) {
        JsonNode op = request.path("op");
        if (!op.isTextual()) {
            throw new ControlError(Code.BAD_REQUEST, "op must be a string");
        }
        switch (op.textValue()) {
            case "token" -> {
                ControlIssuer.Issued token = issuer.token(ttl(request, ControlIssuer.DEFAULT_TOKEN_TTL));
                response.put("token", token.jwt()).put("expiresAt", token.expiresAt().toString());
            }
            case "grant" -> {
                String session = text(request, "session", "session must be a non-empty string");
                if (session.length() > MAX_SESSION_CHARS) {
                    throw new ControlError(Code.BAD_REQUEST, "session longer than " + MAX_SESSION_CHARS
                            + " characters");
                }
                Authority target = target(text(request, "target", "target must be a string HOST:PORT"));
                ControlIssuer.Issued grant = issuer.grant(session, target, ttl(request, issuer.defaultGrantTtl()));
                response.put("grant", grant.jwt()).put("grantId", grant.id())
                        .put("expiresAt", grant.expiresAt().toString());
            }
            case "ports" -> PortsJson.putPorts(response, listeners());
            case "ping" -> response.put("pong", true);
            default -> throw new ControlError(Code.UNKNOWN_OP, "unknown op; the ops are token, grant, ports, ping");
        }
        return response;
    }

    private List<LoopbackListeners.Port> listeners() {
        try {
            return ports.ports();
        } catch (IOException | UnsupportedOperationException e) {
            throw new ControlError(Code.INTERNAL, "cannot read this machine's listening sockets "
                    + "(/proc/net/tcp, Linux only)");
        }
    }

    private static String text(JsonNode request, String field, String problem) {
        JsonNode value = request.path(field);
        if (!value.isTextual() || value.textValue().isBlank()) {
            throw new ControlError(Code.BAD_REQUEST, problem);
        }
        return value.textValue();
    }

    private static Authority target(String text) {
        try {
            return Authority.parse(text);
        } catch (IllegalArgumentException e) {
            // Authority's reasons are fixed words, never the input.
            throw new ControlError(Code.INVALID_TARGET, "target must be HOST:PORT, e.g. localhost:5173 or "
                    + "[::1]:5173 (" + e.getMessage() + ")");
        }
    }

    private static Duration ttl(JsonNode request, Duration absent) {
        JsonNode value = request.path("ttl");
        if (value.isMissingNode() || value.isNull()) {
            return absent;
        }
        if (value.isTextual()) {
            try {
                return Converters.parseDuration(value.textValue());
            } catch (RuntimeException e) {
                // Not the converter's message: it quotes the value. ArithmeticException: "99999999999999d".
            }
        }
        throw new ControlError(Code.BAD_REQUEST, "ttl must be a duration such as 90s, 10m, 12h or PT10M");
    }

    private static ObjectNode error(JsonNode id, Code code, String message) {
        ObjectNode response = JsonTrees.object().set("id", id);
        return response.put("error", code.wire()).put("message", message);
    }

    /** One response as its line: compact JSON, UTF-8, no line break inside (JSON escapes them), then LF. */
    static byte[] line(ObjectNode response) {
        byte[] json = JsonTrees.writeBytes(response);
        byte[] line = Arrays.copyOf(json, json.length + 1);
        line[json.length] = '\n';
        return line;
    }
}
