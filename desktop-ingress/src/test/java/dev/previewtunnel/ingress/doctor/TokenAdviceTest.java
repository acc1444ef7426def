package dev.previewtunnel.ingress.doctor;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Each refusal reason of a connection token gets its own advice, from what the token claims, never quoting it. */
class TokenAdviceTest {
    private static String b64(String json) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(json.getBytes(StandardCharsets.UTF_8));
    }

    /** An unsigned token-shaped value: enough for the advice, which only peeks at the claims. */
    private static final String TOKEN = b64("{\"alg\":\"EdDSA\",\"kid\":\"k-2026\"}") + "."
            + b64("{\"env\":\"staging\",\"exp\":1796180000}") + ".c2lnbmF0dXJl";

    @Test
    void eachReasonHasItsOwnAdvice() {
        Path file = Path.of("/home/dev/token");
        List<String> reasons = List.of("grant_wrong_environment", "grant_expired", "grant_unknown_key",
                "grant_bad_signature", "grant_not_yet_valid", "grant_wrong_audience", "something_else");
        List<String> advice = reasons.stream().map(r -> TokenAdvice.forRefusal(GatewayLabel.DEFAULT,
                "connection token refused (" + r + ")", TOKEN, file)).toList();
        assertEquals(reasons.size(), advice.stream().distinct().count(), advice::toString);
        for (String a : advice) {
            assertTrue(a.startsWith("the gateway refused the token in " + file + " ("), a);
            assertFalse(a.contains(TOKEN) || a.contains("c2lnbmF0dXJl"), "never the token: " + a);
        }
        assertTrue(advice.get(0).contains("it is for environment 'staging'"), advice.get(0));
        assertTrue(advice.get(1).contains("it expired at 2026-12-02T"), advice.get(1));
        assertTrue(advice.get(2).contains("(kid k-2026)"), advice.get(2));
    }

    @Test
    void anEnvironmentsGatewayIsNamedAndToldWhereToIssue() {
        String a = TokenAdvice.forRefusal(new GatewayLabel("staging"), "connection token refused "
                + "(grant_wrong_environment)", TOKEN, null);
        assertTrue(a.startsWith("the gateway of environment 'staging' refused the token (grant_wrong_environment)"), a);
        assertTrue(a.contains("token issue --env staging"), a);
    }

    @Test
    void describeNamesTheEnvironmentAndExpiryAndIsEmptyForGarbage() {
        assertTrue(TokenAdvice.describe(TOKEN).startsWith(" (environment 'staging', expires 2026-12-02T"));
        assertEquals("", TokenAdvice.describe("not-a-jwt"));
    }
}
