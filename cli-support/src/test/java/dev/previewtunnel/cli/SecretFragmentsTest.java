package dev.previewtunnel.cli;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The secret check of the CLI tests finds parts of a secret, not only the whole. */
class SecretFragmentsTest {
    private static final String JWT = "eyJhbGciOiJFZERTQSJ9.eyJqdGkiOiJhYmMifQ.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg";

    @Test
    void aJwtsSignatureAndEveryPieceAreFragments() {
        List<String> fragments = InProcessCli.secretFragments(JWT);
        assertTrue(fragments.contains(JWT));
        assertTrue(fragments.contains("c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"), "the signature segment");
        assertEquals(1 + 1 + JWT.length() - InProcessCli.FRAGMENT + 1, fragments.size());
        assertTrue(fragments.stream().allMatch(f -> JWT.contains(f)));
    }

    @Test
    void aTruncatedSecretOrALoneSignatureIsCaught() {
        String truncated = "grant " + JWT.substring(0, 20) + "...";
        assertThrows(AssertionError.class, () -> InProcessCli.assertNoSecrets(truncated, "", JWT));
        String signature = "sig=" + JWT.substring(JWT.lastIndexOf('.') + 1);
        assertThrows(AssertionError.class, () -> InProcessCli.assertNoSecrets("", signature, JWT));
        InProcessCli.assertNoSecrets("grant id abc", "kid k-1", JWT); // ids are fine
    }
}
