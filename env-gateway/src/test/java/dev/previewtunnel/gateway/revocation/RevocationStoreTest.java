package dev.previewtunnel.gateway.revocation;

import dev.previewtunnel.grants.RevocationList;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The revocation file is read back strictly: what {@link RevocationStore#render} writes parses to the same list,
 * and any mutation of it either still parses to well-formed entries or is refused with a message that names the
 * file and quotes none of its content. Seeded, so a failure replays.
 */
class RevocationStoreTest {
    private static final Path FILE = Path.of("/state/revocations.json");
    private static final Instant T = Instant.parse("2030-01-01T12:00:00Z");

    private static List<RevocationList.Entry> sample() {
        return List.of(new RevocationList.Entry(RevocationList.Kind.ID, "jti-SECRETLESS-aaaa", T),
                new RevocationList.Entry(RevocationList.Kind.SESSION, "sess-bbbb", T.plusSeconds(5)),
                new RevocationList.Entry(RevocationList.Kind.ID, "jti-cccc", T.plusNanos(1)));
    }

    @Test
    void whatIsWrittenReadsBackTheSame() throws Exception {
        assertEquals(sample(), RevocationStore.parse(FILE, RevocationStore.render(sample())));
        assertEquals(List.of(), RevocationStore.parse(FILE, RevocationStore.render(List.of())));
    }

    @Test
    void mutatedFilesParseToValidEntriesOrAreRefusedWithoutQuotingThem() {
        byte[] good = RevocationStore.render(sample());
        SplittableRandom random = new SplittableRandom(16_08);
        int refused = 0;
        for (int i = 0; i < 5000; i++) {
            byte[] bad = mutate(good, random);
            try {
                for (RevocationList.Entry e : RevocationStore.parse(FILE, bad)) {
                    assertTrue(RevocationStore.validId(e.id()), e::toString);
                }
            } catch (IOException e) {
                refused++;
                String m = e.getMessage();
                assertTrue(m.startsWith("revocation file " + FILE + " is corrupt ("), m);
                assertFalse(m.contains("aaaa") || m.contains("bbbb") || m.contains("cccc"), m);
                assertEquals(1, m.lines().count(), m);
            }
        }
        assertTrue(refused > 2500, "most mutations are refused: " + refused);
    }

    @Test
    void shapesOtherThanTheWrittenOneAreRefused() {
        String at = "\"revokedAt\":\"2030-01-01T00:00:00Z\"";
        String[] bad = {
                "", "null", "[]", "{}", "{\"version\":1}", "{\"version\":2,\"revocations\":[]}",
                "{\"version\":\"1\",\"revocations\":[]}", "{\"version\":1,\"revocations\":{}}",
                "{\"version\":1,\"revocations\":[],\"extra\":0}",
                "{\"version\":1,\"revocations\":[],\"version\":1}",
                "{\"version\":1,\"revocations\":[{\"kind\":\"id\",\"id\":\"a\"}]}",
                "{\"version\":1,\"revocations\":[{\"kind\":\"env\",\"id\":\"a\", " + at + "}]}",
                "{\"version\":1,\"revocations\":[{\"kind\":\"id\",\"id\":\"\", " + at + "}]}",
                "{\"version\":1,\"revocations\":[{\"kind\":\"id\",\"id\":\"a b\", " + at + "}]}",
                "{\"version\":1,\"revocations\":[{\"kind\":\"id\",\"id\":\"a\",\"revokedAt\":\"yesterday\"}]}",
                "{\"version\":1,\"revocations\":[{\"kind\":\"id\",\"id\":\"a\",\"revokedAt\":1}]}",
                "{\"version\":1,\"revocations\":[{\"kind\":\"id\",\"id\":\"" + "x".repeat(257)
                        + "\", " + at + "}]}",
        };
        for (String s : bad) {
            IOException e = org.junit.jupiter.api.Assertions.assertThrows(IOException.class,
                    () -> RevocationStore.parse(FILE, s.getBytes(StandardCharsets.UTF_8)), s);
            assertTrue(e.getMessage().contains("is corrupt"), e.getMessage());
        }
    }

    private static byte[] mutate(byte[] in, SplittableRandom r) {
        List<Byte> b = new ArrayList<>(in.length + 8);
        for (byte x : in) b.add(x);
        int edits = 1 + r.nextInt(4);
        for (int k = 0; k < edits && !b.isEmpty(); k++) {
            int at = r.nextInt(b.size());
            switch (r.nextInt(4)) {
                case 0 -> b.set(at, (byte) r.nextInt(256));
                case 1 -> b.remove(at);
                case 2 -> b.add(at, (byte) "{}[],:\"0a ".charAt(r.nextInt(10)));
                default -> b.subList(at, b.size()).clear();
            }
        }
        byte[] out = new byte[b.size()];
        for (int i = 0; i < out.length; i++) out[i] = b.get(i);
        return Arrays.copyOf(out, out.length);
    }
}
