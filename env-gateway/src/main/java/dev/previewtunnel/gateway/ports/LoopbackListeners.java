package dev.previewtunnel.gateway.ports;

import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * The TCP ports a user listens on where the gateway can dial them: bound to a loopback address or to the wildcard
 * (which includes loopback), read from Linux's {@code /proc/net/tcp} and {@code /proc/net/tcp6}. Discovery only
 * lists; it never grants (the key holder decides what a desktop may open, docs/security.md).
 */
public final class LoopbackListeners {
    /** {@code st} column value of a listening socket (TCP_LISTEN in include/net/tcp_states.h). */
    private static final String LISTEN = "0A";
    private static final Pattern HEX = Pattern.compile("[0-9A-Fa-f]+");

    private LoopbackListeners() {
    }

    /** One listening port and the addresses it is bound to (several when it listens on 127.0.0.1 and ::1). */
    public record Port(int port, SortedSet<String> addresses) {
    }

    /** Reads both tables of this machine; a table that does not exist (IPv6 disabled, not Linux) counts as empty. */
    public static List<Port> of(int uid) throws IOException {
        List<String> lines = new ArrayList<>();
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            try {
                lines.addAll(Files.readAllLines(Path.of(table)));
            } catch (NoSuchFileException absent) {
                // no such table on this kernel: nothing listens there
            }
        }
        return parse(lines, uid, ByteOrder.nativeOrder());
    }

    /** The uid this process runs as (what {@code /proc/self} is owned by), the owner {@link #of} filters on. */
    public static int currentUid() throws IOException {
        return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    }

    /**
     * The listening sockets of {@code uid} among table lines (headers and malformed lines are skipped: the kernel's
     * format is fixed, but a line we cannot read must not hide the others), grouped by port in ascending order.
     * {@code order} is the byte order the kernel printed address words in (the host's own).
     */
    static List<Port> parse(List<String> lines, int uid, ByteOrder order) {
        Map<Integer, SortedSet<String>> ports = new TreeMap<>();
        for (String line : lines) {
            String[] f = line.trim().split("\\s+");
            if (f.length < 8 || !f[0].endsWith(":") || !LISTEN.equals(f[3]) || !String.valueOf(uid).equals(f[7])) {
                continue;
            }
            parseEndpoint(f[1], order).filter(e -> e.address.isLoopbackAddress() || e.address.isAnyLocalAddress())
                    .ifPresent(e -> ports.computeIfAbsent(e.port, p -> new TreeSet<>()).add(e.address.getHostAddress()));
        }
        List<Port> out = new ArrayList<>();
        ports.forEach((port, addresses) -> out.add(new Port(port, addresses)));
        return out;
    }

    private record Endpoint(InetAddress address, int port) {
    }

    /**
     * {@code 0100007F:1435} (IPv4) or 32 hex digits {@code :PORT} (IPv6); the port is printed big-endian. An
     * IPv4-mapped IPv6 address comes back from {@link InetAddress#getByAddress(byte[])} as its IPv4 address.
     */
    private static Optional<Endpoint> parseEndpoint(String field, ByteOrder order) {
        int colon = field.indexOf(':');
        String hex = colon < 0 ? "" : field.substring(0, colon);
        String portHex = colon < 0 ? "" : field.substring(colon + 1);
        if ((hex.length() != 8 && hex.length() != 32) || portHex.length() != 4 || !HEX.matcher(hex + portHex).matches()) {
            return Optional.empty(); // parseLong would also take a sign: "-1F5" is not a port
        }
        try {
            byte[] raw = new byte[hex.length() / 2];
            // Each 32-bit word was printed as a number in host order: undo it word by word.
            for (int word = 0; word < raw.length / 4; word++) {
                long value = Long.parseLong(hex.substring(word * 8, word * 8 + 8), 16);
                for (int i = 0; i < 4; i++) {
                    int shift = order == ByteOrder.LITTLE_ENDIAN ? 8 * i : 8 * (3 - i);
                    raw[word * 4 + i] = (byte) (value >>> shift);
                }
            }
            int port = Integer.parseInt(portHex, 16);
            InetAddress address = InetAddress.getByAddress(raw);
            return port == 0 ? Optional.empty() : Optional.of(new Endpoint(address, port));
        } catch (NumberFormatException | UnknownHostException e) {
            return Optional.empty();
        }
    }
}
