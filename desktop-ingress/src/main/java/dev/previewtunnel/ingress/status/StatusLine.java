package dev.previewtunnel.ingress.status;

/** One line a {@link FrontDoor} adds to the status page; {@code ok} false shows it as a problem. */
public record StatusLine(String label, String value, boolean ok) {
}
