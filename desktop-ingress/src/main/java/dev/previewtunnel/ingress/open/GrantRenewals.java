package dev.previewtunnel.ingress.open;

import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.ssh.IssuedGrant;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Keeps each granted target of the session attached with a live grant: mints one, attaches it, and mints the next
 * when half its lifetime has passed, so a grant never expires under a page while the remote answers (issue 19, item
 * 4). Half the lifetime is counted on this machine's clock from the grant's arrival, never from its {@code exp}: that
 * is the remote's clock, and a skew between the two would make renewals late, or one a second. A failed renewal is
 * retried (2 s doubling to 30 s) and remembered in words for the status page and the grant_expired page
 * ({@link #problem}) until a renewal succeeds.
 *
 * <p>Attaching a newer grant for the same target replaces the older one in the session's authority map without
 * touching streams already open (the gateway checks a grant when a stream opens, never afterwards).
 */
final class GrantRenewals implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(GrantRenewals.class);
    private static final Duration FIRST_RETRY = Duration.ofSeconds(2);
    private static final Duration MAX_RETRY = Duration.ofSeconds(30);

    /** Runs a task after a delay; the handle cancels it. A ScheduledExecutorService in use, a queue in tests. */
    @FunctionalInterface
    interface Timer {
        Runnable schedule(Runnable task, Duration delay);

        static Timer of(ScheduledExecutorService executor) {
            return (task, delay) -> {
                ScheduledFuture<?> f = executor.schedule(task, delay.toMillis(), TimeUnit.MILLISECONDS);
                return () -> f.cancel(false);
            };
        }
    }

    /** Mints a grant for (session, target) on the remote; completes off the caller's thread. */
    @FunctionalInterface
    interface Minter {
        CompletableFuture<IssuedGrant> mint(String session, String target, Duration ttl);
    }

    /** One kept target: its current grant's expiry, its pending timer, and the last renewal problem. */
    private static final class Kept {
        final String target;
        volatile Instant expiresAt = Instant.EPOCH;
        Runnable cancel; // guarded by this Kept
        volatile String problem;
        volatile int renewals;
        Duration retry = FIRST_RETRY;

        Kept(String target) {
            this.target = target;
        }
    }

    private final BrowserSession session;
    private final Minter minter;
    private final Duration ttl;
    private final Timer timer;
    private final Map<String, Kept> kept = new ConcurrentHashMap<>();
    private volatile boolean closed;

    GrantRenewals(BrowserSession session, Minter minter, Duration ttl, Timer timer) {
        this.session = session;
        this.minter = minter;
        this.ttl = ttl;
        this.timer = timer;
    }

    /** Grants {@code target} ({@code host:port}) to the session now and keeps it renewed; completes once attached. */
    CompletableFuture<IssuedGrant> keep(String target) {
        Kept k = kept.computeIfAbsent(target, Kept::new);
        return mintAndAttach(k);
    }

    /** Mints a replacement now (the gateway refused the current one as expired); the new grant's JWT. */
    CompletableFuture<String> renewNow(String target) {
        Kept k = kept.get(target);
        if (k == null) {
            return CompletableFuture.failedFuture(new IllegalStateException("not a target opened by this session"));
        }
        return mintAndAttach(k).thenApply(IssuedGrant::jwt);
    }

    /** Why the last renewal for {@code target} failed, in words, or null when its grant is current. */
    String problem(String target) {
        Kept k = kept.get(target);
        return k == null ? null : k.problem;
    }

    /** The targets kept, with their current grant's expiry. */
    Map<String, Instant> expiries() {
        Map<String, Instant> out = new java.util.TreeMap<>();
        kept.values().forEach(k -> out.put(k.target, k.expiresAt));
        return out;
    }

    /** How many renewals (mints after the first) succeeded for {@code target}. */
    int renewals(String target) {
        Kept k = kept.get(target);
        return k == null ? 0 : k.renewals;
    }

    private CompletableFuture<IssuedGrant> mintAndAttach(Kept k) {
        return minter.mint(session.id(), k.target, ttl).whenComplete((grant, failure) -> {
            if (closed) {
                return;
            }
            if (failure != null) {
                onFailure(k, failure);
                return;
            }
            try {
                session.authorities().add(grant.jwt());
            } catch (RuntimeException e) {
                onFailure(k, e);
                return;
            }
            boolean renewal = !Instant.EPOCH.equals(k.expiresAt);
            k.expiresAt = grant.expiresAt();
            k.problem = null;
            synchronized (k) {
                k.retry = FIRST_RETRY;
            }
            if (renewal) {
                k.renewals++;
                log.atInfo().setMessage("grant for {} renewed, valid until {}").addArgument(k.target)
                        .addArgument(grant.expiresAt()).addKeyValue("event", "grant_renewed")
                        .addKeyValue("grantId", grant.grantId()).log();
            }
            schedule(k, renewalDelay());
        });
    }

    /**
     * Half the lifetime, at least one second: a 10-minute grant is renewed after 5 minutes. The gateway mints exactly
     * the lifetime asked for (a longer one than its maximum is refused, not shortened).
     */
    private Duration renewalDelay() {
        Duration half = ttl.dividedBy(2);
        return half.compareTo(Duration.ofSeconds(1)) < 0 ? Duration.ofSeconds(1) : half;
    }

    private void onFailure(Kept k, Throwable failure) {
        Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
                ? failure.getCause() : failure;
        String words = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
        Duration wait;
        synchronized (k) {
            wait = k.retry;
            k.retry = k.retry.multipliedBy(2).compareTo(MAX_RETRY) > 0 ? MAX_RETRY : k.retry.multipliedBy(2);
        }
        k.problem = "the grant for " + k.target + " could not be renewed: " + words;
        log.atWarn().setMessage("grant renewal for {} failed ({}); retrying in {} s").addArgument(k.target)
                .addArgument(words).addArgument(wait.toSeconds()).addKeyValue("event", "grant_renewal_failed").log();
        schedule(k, wait);
    }

    /** One pending renewal per target: a renewNow racing the timer's renewal must not leave two timers. */
    private void schedule(Kept k, Duration delay) {
        synchronized (k) {
            if (closed) {
                return;
            }
            Runnable previous = k.cancel;
            if (previous != null) {
                previous.run();
            }
            k.cancel = timer.schedule(() -> mintAndAttach(k), delay);
        }
    }

    @Override
    public void close() {
        closed = true;
        kept.values().forEach(k -> {
            synchronized (k) {
                Runnable cancel = k.cancel;
                if (cancel != null) {
                    cancel.run();
                }
            }
        });
    }
}
