package dev.previewtunnel.gateway.ports;

import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LoopbackListenersTest {
    private static final String HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid"
            + "  timeout inode";

    /** A table line as the kernel prints it: slot, local, remote, state, queues, timers, retransmits, uid, ... */
    private static String line(String local, String state, int uid) {
        return "   3: " + local + " 00000000:0000 " + state + " 00000000:00000000 00:00000000 00000000  " + uid
                + "        0 123456 1 0000000000000000 100 0 0 10 0";
    }

    @Test
    void listsLoopbackAndWildcardListenersOfTheUserOnly() {
        List<String> lines = List.of(HEADER,
                line("0100007F:1435", "0A", 1000),                       // 127.0.0.1:5173
                line("00000000:0BB8", "0A", 1000),                       // 0.0.0.0:3000
                line("0101A8C0:1F90", "0A", 1000),                       // 192.168.1.1:8080: not dialable
                line("0100007F:2328", "0A", 0),                          // 127.0.0.1:9000 of root
                line("0100007F:1436", "01", 1000),                       // established, not listening
                line("00000000000000000000000001000000:1435", "0A", 1000), // [::1]:5173
                line("0000000000000000FFFF00000100007F:22B8", "0A", 1000)); // [::ffff:127.0.0.1]:8888
        List<LoopbackListeners.Port> ports = LoopbackListeners.parse(lines, 1000, ByteOrder.LITTLE_ENDIAN);
        assertEquals(List.of(
                new LoopbackListeners.Port(3000, new TreeSet<>(Set.of("0.0.0.0"))),
                new LoopbackListeners.Port(5173, new TreeSet<>(Set.of("127.0.0.1", "0:0:0:0:0:0:0:1"))),
                new LoopbackListeners.Port(8888, new TreeSet<>(Set.of("127.0.0.1")))), ports);
    }

    @Test
    void readsWordsInTheHostsByteOrder() {
        List<LoopbackListeners.Port> ports = LoopbackListeners.parse(
                List.of(line("7F000001:1435", "0A", 7)), 7, ByteOrder.BIG_ENDIAN);
        assertEquals(List.of(new LoopbackListeners.Port(5173, new TreeSet<>(Set.of("127.0.0.1")))), ports);
    }

    /** The table is read from the kernel, but a line we cannot read must neither throw nor hide the lines after it. */
    @Test
    void malformedLinesAreSkippedNeverThrown() {
        Random random = new Random(18);
        String alphabet = "0123456789ABCDEFabcdefxyz: \t-";
        for (int round = 0; round < 2_000; round++) {
            List<String> lines = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                StringBuilder b = new StringBuilder(i % 2 == 0 ? line("0100007F:1435", "0A", 5) : "");
                int edits = random.nextInt(6);
                for (int e = 0; e < edits && b.length() > 0; e++) {
                    b.setCharAt(random.nextInt(b.length()), alphabet.charAt(random.nextInt(alphabet.length())));
                }
                for (int e = random.nextInt(3); e > 0; e--) {
                    b.insert(random.nextInt(b.length() + 1), alphabet.charAt(random.nextInt(alphabet.length())));
                }
                lines.add(b.toString());
            }
            lines.add(line("0100007F:2329", "0A", 5));
            List<LoopbackListeners.Port> ports = LoopbackListeners.parse(lines, 5, ByteOrder.LITTLE_ENDIAN);
            assertTrue(ports.stream().anyMatch(p -> p.port() == 9001), "seed 18 round " + round + ": " + lines);
            assertTrue(ports.stream().allMatch(p -> p.port() > 0 && p.port() < 65536 && !p.addresses().isEmpty()));
        }
    }

    @Test
    void findsASocketThisProcessListensOn() throws Exception {
        try (ServerSocket server = new ServerSocket()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            List<LoopbackListeners.Port> ports = LoopbackListeners.of(LoopbackListeners.currentUid());
            assertTrue(ports.stream().anyMatch(p -> p.port() == server.getLocalPort()
                            && p.addresses().contains(InetAddress.getLoopbackAddress().getHostAddress())),
                    "port " + server.getLocalPort() + " not in " + ports);
        }
    }
}
