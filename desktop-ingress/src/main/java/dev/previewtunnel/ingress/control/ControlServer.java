package dev.previewtunnel.ingress.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.previewtunnel.ingress.Ingress;
import dev.previewtunnel.ingress.session.AuthorityMap;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.EgressPolicy;
import dev.previewtunnel.ingress.session.SessionStore;
import dev.previewtunnel.ingress.session.StateFiles;
import dev.previewtunnel.ingress.session.VirtualHostTakenException;
import dev.previewtunnel.ingress.tunnel.TunnelPool;
import dev.previewtunnel.json.JsonTrees;
import dev.previewtunnel.local.http.LocalApi;
import dev.previewtunnel.local.http.LocalApi.ApiException;
import dev.previewtunnel.local.http.LocalApi.Response;
import dev.previewtunnel.local.http.LocalHttpServer;
import dev.previewtunnel.mux.local.JvmDefaults;
import io.netty.channel.Channel;
import io.netty.util.NetUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The ingress's local control API (HTTP+JSON on loopback, see {@link LocalApi} for the request checks). Its
 * address and token are written to an owner-only state file, {@code control.json} in the state directory;
 * the CLI ({@code session create}, {@code grant add}, {@code status --json}, ...) reads them from there.
 *
 * <pre>
 *   GET    /v1/status                              tunnel state (default gateway and each environment's own),
 *                                                  proxy address, virtual-host suffix, sessions
 *   GET    /v1/sessions                            every session with its granted authorities
 *   POST   /v1/sessions          {"id"?,"egress"?} a new session; its credential goes to an owner-only file
 *   DELETE /v1/sessions/ID                         closes the session and its live connections
 *   POST   /v1/sessions/ID/rotate                  a new credential (its file rewritten); closes the
 *                                                  connections opened with the old one
 *   POST   /v1/sessions/ID/grants {"grant","name"?} attaches a grant; answers its authorities (409
 *                                                  virtual_host_taken when its virtual host names another target)
 *   DELETE /v1/sessions/ID/grants/GRANT_ID         detaches it and ends the connections that used it
 * </pre>
 *
 * <p>Every change is saved at once to the state directory ({@link SessionStore}): sessions, their credentials and
 * grants survive an ingress restart.
 */
public final class ControlServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ControlServer.class);
    public static final String STATE_FILE = "control.json";

    private final Ingress ingress;
    private final Path stateDir;
    private final Path stateFile;
    private final SessionStore store;
    private final Channel channel;
    /**
     * The JVM's limits for status, read once on the first status request on a thread of its own, then kept (they
     * never change; null if they could not be read, and status leaves them out). Not at start: with the descriptor
     * limit's MXBean they were ~2 MiB of an idle ingress's RSS (docs/performance.md, finding 42); not on the event
     * loop: their first lookup took ~60 ms here, which would stall the proxy's connections on that loop.
     */
    private final AtomicReference<CompletableFuture<String>> jvmLimitsRead = new AtomicReference<>();

    private ControlServer(Ingress ingress, Path stateDir, InetSocketAddress listen, LocalHttpServer.Limits limits)
            throws IOException, InterruptedException {
        this.ingress = ingress;
        this.stateDir = stateDir;
        this.stateFile = stateDir.resolve(STATE_FILE);
        this.store = new SessionStore(stateDir);
        String token = LocalApi.newToken();
        this.channel = ingress.bindLocalApi(listen, token, this::answer, limits);
        StateFiles.writeOwnerOnly(stateFile, JsonTrees.write(LocalApi.object()
                .put("url", url())
                .put("token", token)
                .put("proxy", NetUtil.toSocketAddressString(ingress.proxyAddress()))
                .put("pid", ProcessHandle.current().pid())) + "\n");
    }

    public static ControlServer start(Ingress ingress, Path stateDir, InetSocketAddress listen)
            throws IOException, InterruptedException {
        return start(ingress, stateDir, listen, LocalHttpServer.Limits.defaults());
    }

    /** As above, with the request deadline and connection cap of {@code limits}. */
    public static ControlServer start(Ingress ingress, Path stateDir, InetSocketAddress listen,
                                      LocalHttpServer.Limits limits) throws IOException, InterruptedException {
        return new ControlServer(ingress, stateDir, listen, limits);
    }

    public String url() {
        return "http://" + NetUtil.toSocketAddressString((InetSocketAddress) channel.localAddress());
    }

    /** The owner-only file with the API address and token (print its path, never its content). */
    public Path stateFile() {
        return stateFile;
    }

    /** Status waits for the JVM's limits ({@link #jvmLimits}); every other request is answered at once. */
    private CompletionStage<Response> answer(String method, String path, JsonNode body) throws ApiException {
        String[] parts = path.split("/");
        if (parts.length == 3 && "v1".equals(parts[1]) && "status".equals(parts[2]) && "GET".equals(method)) {
            // The first time, status() runs on the limits' thread: it reads the same concurrent maps and pool
            // state it reads from whichever event loop the control connection landed on.
            return jvmLimits().thenApply(limits -> Response.ok(status(limits)));
        }
        return CompletableFuture.completedFuture(handle(method, parts, body));
    }

    private CompletableFuture<String> jvmLimits() {
        CompletableFuture<String> limits = jvmLimitsRead.get();
        if (limits != null) {
            return limits;
        }
        CompletableFuture<String> mine = new CompletableFuture<>();
        if (!jvmLimitsRead.compareAndSet(null, mine)) {
            return jvmLimitsRead.get();
        }
        Thread reader = new Thread(() -> {
            String read = null;
            try {
                read = JvmDefaults.describeRunning();
            } catch (RuntimeException e) { // a JVM without these MXBeans: status without the limits
                log.warn("could not read the JVM's limits for status: {}", e.toString());
            } finally { // an Error still propagates (FatalErrors); the request is not left waiting for it
                mine.complete(read);
            }
        }, "jvm-limits");
        reader.setDaemon(true);
        reader.start();
        return mine;
    }

    private Response handle(String method, String[] parts, JsonNode body) throws ApiException {
        // "", "v1", resource, id, sub, subId
        if (parts.length < 3 || !"v1".equals(parts[1])) {
            throw new ApiException(404, "not_found", "no such resource");
        }
        if (!"sessions".equals(parts[2])) {
            throw new ApiException(404, "not_found", "no such resource");
        }
        if (parts.length == 3) {
            if ("GET".equals(method)) {
                ArrayNode list = LocalApi.object().arrayNode();
                ingress.sessions().all().forEach(s -> list.add(describe(s)));
                return Response.ok(LocalApi.object().set("sessions", list));
            }
            if ("POST".equals(method)) {
                return Response.ok(createSession(body));
            }
        }
        BrowserSession session = ingress.sessions().find(parts[3])
                .orElseThrow(() -> new ApiException(404, "no_such_session", "no session with that id"));
        if (parts.length == 4 && "DELETE".equals(method)) {
            ingress.removeSession(session.id());
            int closed = session.closeAll();
            deleteQuietly(StateFiles.credentialsFile(stateDir, session.id()));
            saved();
            return Response.ok(LocalApi.object().put("closed", session.id()).put("closedConnections", closed));
        }
        if (parts.length == 5 && "grants".equals(parts[4]) && "POST".equals(method)) {
            String grant = LocalApi.text(body, "grant", true);
            String name = LocalApi.text(body, "name", false);
            AuthorityMap.Entry entry;
            try {
                entry = session.authorities().add(grant, name);
            } catch (IllegalArgumentException e) {
                throw new ApiException(400, "not_a_grant", "the value is not a readable grant");
            } catch (VirtualHostTakenException e) {
                throw new ApiException(409, "virtual_host_taken", e.getMessage());
            }
            saved();
            return Response.ok(describe(entry, session));
        }
        if (parts.length == 5 && "rotate".equals(parts[4]) && "POST".equals(method)) {
            int closed = session.rotate();
            Path credentials;
            try {
                credentials = StateFiles.writeCredentials(stateDir, session);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return Response.ok(LocalApi.object().put("rotated", session.id()).put("closedConnections", closed)
                    .put("credentialsFile", credentials.toString()));
        }
        if (parts.length == 6 && "grants".equals(parts[4]) && "DELETE".equals(method)) {
            int closed = session.detachGrant(parts[5]);
            if (closed < 0) {
                throw new ApiException(404, "no_such_grant", "no grant with that id in this session");
            }
            saved();
            return Response.ok(LocalApi.object().put("detached", parts[5]).put("closedConnections", closed));
        }
        throw new ApiException(404, "not_found", "no such resource");
    }

    private ObjectNode createSession(JsonNode body) throws ApiException {
        String id = LocalApi.text(body, "id", false);
        String egress = LocalApi.text(body, "egress", false);
        BrowserSession session;
        try {
            session = BrowserSession.create(id != null ? id : "s" + Long.toHexString(System.nanoTime() & 0xffffffL),
                    ingress.virtualHostSuffix());
            if (egress != null) {
                session.egress(EgressPolicy.valueOf(egress.toUpperCase(Locale.ROOT)));
            }
        } catch (IllegalArgumentException e) {
            throw new ApiException(400, "bad_request", e.getMessage().startsWith("No enum")
                    ? "egress must be deny or direct" : e.getMessage());
        }
        if (ingress.sessions().find(session.id()).isPresent()) {
            throw new ApiException(409, "session_exists", "a session with that id exists");
        }
        Path credentials;
        try {
            credentials = StateFiles.writeCredentials(stateDir, session);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        ingress.sessions().add(session);
        saved();
        return describe(session).put("credentialsFile", credentials.toString());
    }

    private ObjectNode status(String jvm) {
        ObjectNode environments = LocalApi.object();
        ingress.pools().byEnvironment().forEach((environment, pool) -> environments.set(environment,
                LocalApi.object()
                        .put("gateway", ingress.environmentGateways().get(environment).shown())
                        .set("tunnel", tunnel(pool))));
        URI gateway = ingress.config().gateway();
        ObjectNode status = LocalApi.object()
                .put("proxy", NetUtil.toSocketAddressString(ingress.proxyAddress()))
                .put("gateway", gateway.getScheme() + "://" + gateway.getHost() + ":" + gateway.getPort()
                        + gateway.getPath())
                .put("virtualHostSuffix", ingress.virtualHostSuffix())
                .put("sessions", ingress.sessions().all().size());
        if (jvm != null) {
            status.put("jvm", jvm); // for doctor, which runs in a JVM of its own
        }
        status.set("tunnel", tunnel(ingress.pool()));
        status.set("environments", environments);
        return status;
    }

    /** One pool's state: connected, or reconnecting since when and why. */
    private static ObjectNode tunnel(TunnelPool p) {
        TunnelPool.Status pool = p.status();
        ObjectNode tunnel = LocalApi.object()
                .put("state", pool.state())
                .put("connected", pool.connected())
                .put("connecting", pool.connecting())
                .put("draining", pool.draining())
                .put("size", pool.size())
                .put("liveStreams", pool.liveStreams())
                .put("reconnects", pool.reconnects());
        if (pool.downSince() != null) {
            tunnel.put("reconnectingSince", pool.downSince().toString());
        }
        if (pool.lastError() != null) {
            tunnel.put("lastError", pool.lastError());
        }
        return tunnel;
    }

    private ObjectNode describe(BrowserSession s) {
        ArrayNode grants = LocalApi.object().arrayNode();
        s.authorities().entries().forEach(e -> grants.add(describe(e, s)));
        ObjectNode node = LocalApi.object()
                .put("id", s.id())
                .put("username", s.username())
                .put("egress", s.egress().name().toLowerCase(Locale.ROOT))
                .put("liveConnections", s.liveConnections())
                .put("liveStreams", s.liveStreams());
        node.set("grants", grants);
        return node;
    }

    private ObjectNode describe(AuthorityMap.Entry e, BrowserSession s) {
        String environment = e.view().environment();
        ObjectNode node = LocalApi.object()
                .put("grantId", e.grantId())
                .put("environment", environment)
                // Which pool carries its streams: the environment's own gateway, or the default one.
                .put("gateway", ingress.pools().hasOwnGateway(environment) ? "environment" : "default")
                .put("tunnelState", ingress.pools().forEnvironment(environment).status().state())
                .put("target", e.target().toString())
                .put("virtualHost", e.virtualHost().toString())
                .put("expiresAt", String.valueOf(e.view().expiresAt()));
        ArrayNode authorities = node.putArray("authorities");
        authorities.add(e.virtualHost().toString());
        if (s.authorities().route(new dev.previewtunnel.mux.wire.Authority("localhost", e.target().port()))
                .map(r -> r.grantId().equals(e.grantId())).orElse(false)) {
            authorities.add("localhost:" + e.target().port());
            authorities.add("127.0.0.1:" + e.target().port());
            authorities.add("[::1]:" + e.target().port());
        }
        return node;
    }

    /** Saves the sessions after a change; a failure is logged by the store, the change itself stands. */
    private void saved() {
        store.saveQuietly(ingress.proxyAddress(), ingress.sessions().all());
    }

    private static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException ignored) {
            // best effort
        }
    }

    @Override
    public void close() {
        channel.close().syncUninterruptibly();
        deleteQuietly(stateFile);
    }
}
