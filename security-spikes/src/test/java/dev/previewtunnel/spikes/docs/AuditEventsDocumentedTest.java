package dev.previewtunnel.spikes.docs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.previewtunnel.gateway.GatewayAuditEvent;
import dev.previewtunnel.grants.GrantFailure;
import dev.previewtunnel.ingress.IngressAuditEvent;
import dev.previewtunnel.local.audit.AuditEvent;
import dev.previewtunnel.mux.wire.TunnelError;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Audit event names in the docs against the names the code can write ({@link GatewayAuditEvent},
 * {@link IngressAuditEvent}), both ways: docs/operations.md's audit table lists exactly the code's names per side;
 * every audit line quoted in any doc ({@code "side":..., "event":...}) names an event its side writes; and every
 * backticked name in any doc that is spelled like an event ({@code *_opened}, {@code *_refused}...) is an event,
 * or one of the other vocabularies that share those endings (error codes, {@code why} values).
 */
class AuditEventsDocumentedTest {
    private static final Path OPERATIONS = Path.of("docs", "operations.md");
    private static final Map<String, Set<String>> EMITTED = Map.of(
            "gateway", names(GatewayAuditEvent.values()),
            "ingress", names(IngressAuditEvent.values()));
    private static final Pattern QUOTED_LINE = Pattern.compile("\\{\"(?:ts|side)\"[^\\n`]*?\"event\":\"[a-z_]+\"[^\\n`]*?}");
    private static final Pattern EVENT_LIKE = Pattern.compile(
            "`([a-z]+(?:_[a-z]+)*_(?:opened|closed|refused|issued|cut|finished|retried|refresh|enabled|granted))`");
    /**
     * Names with an event's ending that are not events: a stream_closed line's {@code why} values (StreamRecord,
     * StreamAuthorizer) and HTTP refusal codes that are string literals (LocalApi's browser_requests_refused and
     * token_refused, TokenAuthenticator's token_refused). TunnelError and GrantFailure codes come from the code.
     */
    private static final Set<String> OTHER_VALUES = Set.of("browser_closed", "target_closed", "ingress_closed",
            "session_closed", "browser_requests_refused", "token_refused");

    @Test
    void theAuditTableListsExactlyTheEventsEachSideWrites() {
        String section = DocsFiles.section(OPERATIONS, "### Audit stream");
        Map<String, Set<String>> documented = Map.of("gateway", new TreeSet<>(), "ingress", new TreeSet<>());
        for (String[] row : DocsFiles.tableRows(section, "| side | event | fields |")) {
            Set<String> side = documented.get(row[0]);
            assertTrue(side != null, () -> OPERATIONS + " audit table: unknown side in row " + String.join(" | ", row));
            Stream.of(row[1].split(" / ")).map(n -> n.replace("`", "").strip()).forEach(side::add);
        }
        for (String side : List.of("gateway", "ingress")) {
            Set<String> notEmitted = new TreeSet<>(documented.get(side));
            notEmitted.removeAll(EMITTED.get(side));
            Set<String> undocumented = new TreeSet<>(EMITTED.get(side));
            undocumented.removeAll(documented.get(side));
            assertEquals(Set.of(), notEmitted, OPERATIONS + " audit table, side " + side
                    + ": documented but never written by the code (" + enumOf(side) + ")");
            assertEquals(Set.of(), undocumented, OPERATIONS + " audit table, side " + side
                    + ": written by the code (" + enumOf(side) + ") but not documented");
        }
    }

    @Test
    void everyQuotedAuditLineNamesAnEventItsSideWrites() throws Exception {
        ObjectMapper json = new ObjectMapper();
        List<String> wrong = new ArrayList<>();
        int quoted = 0;
        for (Path doc : DocsFiles.all()) {
            List<String> lines = DocsFiles.read(doc).lines().toList();
            for (int i = 0; i < lines.size(); i++) {
                Matcher m = QUOTED_LINE.matcher(lines.get(i));
                while (m.find()) {
                    JsonNode line = json.readTree(m.group());
                    String side = line.path("side").asText();
                    if (!EMITTED.containsKey(side)) {
                        continue; // a log line's or a command's JSON, not an audit line
                    }
                    quoted++;
                    String event = line.path("event").asText();
                    if (!EMITTED.get(side).contains(event)) {
                        wrong.add(doc + ":" + (i + 1) + ": the " + side + " writes no '" + event + "' (its events: "
                                + EMITTED.get(side) + ")");
                    }
                }
            }
        }
        assertTrue(quoted >= 3, "found only " + quoted + " quoted audit lines: is the pattern still right?");
        assertEquals(List.of(), wrong, "quoted audit lines naming events the code does not write");
    }

    @Test
    void everyEventLikeNameInTheDocsIsAnEventOrAKnownCode() {
        Set<String> known = new TreeSet<>(OTHER_VALUES);
        EMITTED.values().forEach(known::addAll);
        Stream.of(TunnelError.values()).map(TunnelError::code).forEach(known::add);
        Stream.of(GrantFailure.values()).flatMap(f -> Stream.of(f.code(), f.tokenCode())).forEach(known::add);
        List<String> unknown = new ArrayList<>();
        for (Path doc : DocsFiles.all()) {
            List<String> lines = DocsFiles.read(doc).lines().toList();
            for (int i = 0; i < lines.size(); i++) {
                Matcher m = EVENT_LIKE.matcher(lines.get(i));
                while (m.find()) {
                    if (!known.contains(m.group(1))) {
                        unknown.add(doc + ":" + (i + 1) + ": `" + m.group(1) + "`");
                    }
                }
            }
        }
        assertEquals(List.of(), unknown, "names spelled like audit events that no side writes (and no error code or "
                + "why value has): gateway " + EMITTED.get("gateway") + ", ingress " + EMITTED.get("ingress"));
    }

    private static Set<String> names(AuditEvent[] events) {
        return Stream.of(events).map(AuditEvent::wireName).collect(Collectors.toCollection(TreeSet::new));
    }

    private static String enumOf(String side) {
        return side.equals("gateway") ? GatewayAuditEvent.class.getName() : IngressAuditEvent.class.getName();
    }
}
