package dev.previewtunnel.mux.client;

/**
 * What a gateway answered to the WebSocket upgrade: its HTTP status, the {@code error} code and {@code message} of
 * its JSON refusal (null when it sent none, as on a 101), and its {@code Date} header (null when absent), from
 * which a client measures its clock skew against the gateway's (grants are checked with a 30 s allowance).
 */
public record UpgradeAnswer(int status, String error, String message, String date) {
}
