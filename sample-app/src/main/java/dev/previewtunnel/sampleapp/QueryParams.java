package dev.previewtunnel.sampleapp;

import io.netty.handler.codec.http.QueryStringDecoder;

import java.util.List;

/** The first value of a query parameter, as text or as a number. */
final class QueryParams {
    private QueryParams() {
    }

    static String first(QueryStringDecoder query, String name) {
        List<String> values = query.parameters().get(name);
        return values == null || values.isEmpty() ? "" : values.get(0);
    }

    /** {@code dflt} when absent; throws NumberFormatException when not an integer. */
    static long asLong(QueryStringDecoder query, String name, long dflt) {
        List<String> values = query.parameters().get(name);
        if (values == null || values.isEmpty()) {
            return dflt;
        }
        return Long.parseLong(values.get(0).trim());
    }
}
