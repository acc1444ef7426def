package dev.previewtunnel.gateway.control;

import dev.previewtunnel.gateway.GatewayAuditEvent;
import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.gateway.control.ControlError.Code;
import dev.previewtunnel.gateway.policy.PolicyException;
import dev.previewtunnel.gateway.policy.TargetPolicy;
import dev.previewtunnel.grants.GrantIssuer;
import dev.previewtunnel.grants.GrantSpec;
import dev.previewtunnel.grants.SigningKey;
import dev.previewtunnel.json.JsonTrees;
import dev.previewtunnel.local.audit.AuditLog;
import dev.previewtunnel.mux.wire.Authority;
import io.jsonwebtoken.io.Decoders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * Mints what the control channel hands out, for the one environment this gateway serves: connection tokens (as
 * {@code token issue}) and tcp grants (as {@code grant issue}, refused for a target this gateway's policy would
 * refuse to dial). Each one minted is audited by its ids and expiry, never the JWT. Used by one thread.
 */
public final class ControlIssuer {
    public static final Duration DEFAULT_TOKEN_TTL = Duration.ofHours(12);
    public static final Duration DEFAULT_GRANT_TTL = Duration.ofMinutes(10);
    private static final Logger log = LoggerFactory.getLogger(ControlIssuer.class);

    /**
     * The current signing key, read again for every request so that a {@code keys rotate} takes effect without a
     * restart; throws when the key directory cannot be read (the message names paths, never key material).
     */
    @FunctionalInterface
    public interface SigningKeys {
        SigningKey current();
    }

    /** One JWT minted, with its {@code jti} and {@code exp} as signed. */
    record Issued(String jwt, String id, Instant expiresAt) {
    }

    private final String environment;
    private final SigningKeys keys;
    private final Duration maxGrantLifetime;
    private final TargetPolicy policy;
    private final AuditLog audit;
    private final Clock clock;

    /** @param maxGrantLifetime serve's --max-grant-lifetime: a longer grant would be refused by this gateway */
    public ControlIssuer(String environment, SigningKeys keys, Duration maxGrantLifetime, TargetPolicy policy,
                         AuditLog audit, Clock clock) {
        this.environment = Objects.requireNonNull(environment, "environment");
        this.keys = Objects.requireNonNull(keys, "keys");
        this.maxGrantLifetime = Objects.requireNonNull(maxGrantLifetime, "maxGrantLifetime");
        this.policy = Objects.requireNonNull(policy, "policy");
        this.audit = Objects.requireNonNull(audit, "audit");
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    /** The ttl of a grant request without one: 10 minutes, or less when this gateway accepts less. */
    Duration defaultGrantTtl() {
        return DEFAULT_GRANT_TTL.compareTo(maxGrantLifetime) > 0 ? maxGrantLifetime : DEFAULT_GRANT_TTL;
    }

    Issued token(Duration ttl) {
        requireTtl(ttl, GrantIssuer.MAX_TTL, "24h, the most a token may live");
        Issued token = issued(issuer().issueConnectionToken(environment, ttl));
        audit.event(GatewayAuditEvent.TOKEN_ISSUED).put("env", environment).put("tokenId", token.id())
                .put("expiresAt", token.expiresAt().toString()).write();
        return token;
    }

    Issued grant(String session, Authority target, Duration ttl) {
        requireTtl(ttl, maxGrantLifetime, "this gateway's --max-grant-lifetime");
        GrantSpec spec;
        try {
            spec = GrantSpec.tcp(environment, session, target.host(), target.port());
        } catch (IllegalArgumentException e) {
            throw new ControlError(Code.INVALID_TARGET, "target host is not a host name or an IP address");
        }
        requireDialable(spec.targetHost());
        Issued grant = issued(issuer().issueGrant(spec, ttl));
        audit.event(GatewayAuditEvent.GRANT_ISSUED).put("env", environment).put("session", session)
                .put("target", target.toString()).put("grantId", grant.id())
                .put("expiresAt", grant.expiresAt().toString()).write();
        return grant;
    }

    private static void requireTtl(Duration ttl, Duration max, String what) {
        if (ttl.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new ControlError(Code.BAD_REQUEST, "ttl must be at least 1s");
        }
        if (ttl.compareTo(max) > 0) {
            throw new ControlError(Code.TTL_TOO_LONG, "ttl exceeds " + what + " (" + max.toSeconds() + "s)");
        }
    }

    /**
     * The policy's verdict where it needs no DNS (localhost, literals, numeric spellings). A name is resolved and
     * checked by the gateway when a stream dials it (every answer, at that moment); resolving here would block
     * the channel on DNS and prove nothing about the dial.
     */
    private void requireDialable(String host) {
        try {
            policy.checkWithoutDns(host);
        } catch (PolicyException e) {
            throw new ControlError(Code.INVALID_TARGET, "this gateway never dials that target: " + e.getMessage());
        }
    }

    private GrantIssuer issuer() {
        SigningKey key;
        try {
            key = keys.current();
        } catch (RuntimeException e) {
            log.warn("control channel cannot read the signing key: {}", e.getMessage());
            throw new ControlError(Code.INTERNAL, "cannot read the signing key; see the gateway's log");
        }
        return new GrantIssuer(key, clock);
    }

    /** The jti and exp of a JWT just signed here (our own output: reading it back is not verifying anything). */
    private static Issued issued(String jwt) {
        try {
            String[] parts = jwt.split("\\.", -1);
            JsonNode claims = JsonTrees.parse(Decoders.BASE64URL.decode(parts[1]));
            return new Issued(jwt, claims.get("jti").textValue(),
                    Instant.ofEpochSecond(claims.get("exp").longValue()));
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("cannot read back a JWT just signed", e);
        }
    }
}
