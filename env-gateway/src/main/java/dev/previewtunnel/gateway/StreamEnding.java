package dev.previewtunnel.gateway;

import dev.previewtunnel.mux.relay.RelayHandler;
import io.netty.channel.Channel;
import io.netty.util.AttributeKey;

import java.util.List;

/**
 * Why a stream the gateway accepted ended, for its one {@code stream_closed} line: a reason the gateway gave when
 * it closed the stream itself (revocation, idle timeout), else what the relay saw (both directions ended, the
 * target closed first, the stream closed first: by the ingress, or because the tunnel connection was lost).
 */
final class StreamEnding {
    static final String REVOKED = "revoked";
    static final String IDLE = "idle";
    /** Every value {@code why} takes; docs/operations.md lists the same set. */
    static final List<String> WHY_VALUES = List.of("completed", "target_closed", "ingress_closed", "tunnel_lost",
            REVOKED, IDLE);
    private static final AttributeKey<String> REASON = AttributeKey.valueOf("ptun-stream-end-reason");

    private StreamEnding() {
    }

    /** Closes a stream, saying why first (the first reason given stays). */
    static void closeFor(Channel stream, String reason) {
        stream.attr(REASON).setIfAbsent(reason);
        stream.close();
    }

    static String why(Channel stream, RelayHandler.End end) {
        String given = stream.attr(REASON).get();
        if (given != null) {
            return given;
        }
        return switch (end) {
            case BOTH_ENDED -> "completed";
            case B_CLOSED_FIRST -> "target_closed";
            case A_CLOSED_FIRST -> stream.parent() != null && !stream.parent().isActive() ? "tunnel_lost"
                    : "ingress_closed";
        };
    }
}
