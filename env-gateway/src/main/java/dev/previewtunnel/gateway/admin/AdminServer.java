package dev.previewtunnel.gateway.admin;

import com.fasterxml.jackson.databind.JsonNode;
import dev.previewtunnel.gateway.GatewayStatus;
import dev.previewtunnel.gateway.revocation.RevocationNotPersistedException;
import dev.previewtunnel.gateway.revocation.RevocationStore;
import dev.previewtunnel.gateway.revocation.Revocations;
import dev.previewtunnel.grants.RevocationList;
import dev.previewtunnel.local.http.LocalApi;
import dev.previewtunnel.local.http.LocalHttpServer;
import dev.previewtunnel.local.files.OwnerOnlyFiles;
import dev.previewtunnel.local.http.LocalApi.ApiException;
import dev.previewtunnel.local.http.LocalApi.Response;
import dev.previewtunnel.local.shutdown.Shutdown;
import io.netty.channel.Channel;
import dev.previewtunnel.mux.relay.Transports;
import io.netty.channel.EventLoopGroup;
import io.netty.util.NetUtil;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * The gateway's admin endpoint: HTTP+JSON on a loopback address ({@link LocalApi}: no web pages, loopback Host,
 * bearer token), the token kept in an owner-only file and never printed. Revoking a grant or a session refuses
 * it from then on and resets its live streams at once ({@link Revocations}). {@code serve --admin-listen} starts
 * it beside the gateway and closes it first at stop.
 *
 * <pre>
 *   POST /v1/revoke   {"grant":"JTI"} or {"session":"SESSION"}  -> {"revoked":"grant","id":...,"closedStreams":N}
 *                     507 revocation_list_full at --max-revocations; 500 revocation_not_saved when the state
 *                     file could not be written (in force until restart)
 *   GET  /v1/status                                             -> {"env":...,"connections":N,"liveStreams":N}
 * </pre>
 */
public final class AdminServer implements AutoCloseable {
    private final Channel channel;
    private final Path tokenFile;
    private final EventLoopGroup group;

    private AdminServer(Channel channel, Path tokenFile, EventLoopGroup group) {
        this.channel = channel;
        this.tokenFile = tokenFile;
        this.group = group;
    }

    /**
     * Starts the admin endpoint on {@code listen} (must be loopback) with the request deadline and connection cap
     * of {@code limits}, and writes a fresh token to {@code tokenFile} with owner-only permissions. It runs on an
     * event loop of its own: a revocation is fsync-ed before the answer, which must not stall tunnel traffic.
     */
    public static AdminServer start(Supplier<GatewayStatus> status, Revocations revocations,
                                    InetSocketAddress listen, Path tokenFile, LocalHttpServer.Limits limits)
            throws IOException, InterruptedException {
        Transports transports = Transports.best();
        EventLoopGroup group = transports.newGroup(1, "ptun-gateway-admin");
        try {
            String token = LocalApi.newToken();
            OwnerOnlyFiles.write(tokenFile, token + "\n");
            Channel ch = LocalApi.bind(group, transports.serverSocketChannel(), listen, token, "preview-tunnel-admin",
                    (method, path, body) -> handle(status, revocations, method, path, body), limits);
            return new AdminServer(ch, tokenFile, group);
        } catch (IOException | InterruptedException | RuntimeException e) {
            Shutdown.begin(group);
            throw e;
        }
    }

    private static Response handle(Supplier<GatewayStatus> status, Revocations revocations, String method,
                                   String path, JsonNode body) throws ApiException {
        if ("/v1/status".equals(path) && "GET".equals(method)) {
            GatewayStatus now = status.get();
            return Response.ok(LocalApi.object()
                    .put("env", now.environment())
                    .put("connections", now.connections())
                    .put("liveStreams", now.liveStreams()));
        }
        if ("/v1/revoke".equals(path) && "POST".equals(method)) {
            String grant = LocalApi.text(body, "grant", false);
            String session = LocalApi.text(body, "session", false);
            if ((grant == null) == (session == null)) {
                throw new ApiException(400, "bad_request", "give exactly one of \"grant\" (a grant id) or \"session\"");
            }
            String id = grant != null ? grant : session;
            if (!RevocationStore.validId(id)) {
                throw new ApiException(400, "bad_request", "an id is 1 to " + RevocationStore.MAX_ID_LENGTH
                        + " printable ASCII characters");
            }
            int closed;
            try {
                closed = grant != null ? revocations.revokeGrant(grant) : revocations.revokeSession(session);
            } catch (RevocationList.Full e) {
                // Nothing is forgotten to make room: the operator rotates the key or raises --max-revocations.
                throw new ApiException(507, "revocation_list_full", e.getMessage() + "; nothing was revoked: "
                        + "rotate the signing key (keys rotate) to end every grant and token, or raise "
                        + "--max-revocations");
            } catch (RevocationNotPersistedException e) {
                throw new ApiException(500, "revocation_not_saved", e.getMessage());
            }
            return Response.ok(LocalApi.object()
                    .put("revoked", grant != null ? "grant" : "session")
                    .put("id", grant != null ? grant : session)
                    .put("closedStreams", closed));
        }
        throw new ApiException(404, "not_found", "no such admin resource");
    }

    public InetSocketAddress address() {
        return (InetSocketAddress) channel.localAddress();
    }

    public String url() {
        return "http://" + NetUtil.toSocketAddressString(address());
    }

    public Path tokenFile() {
        return tokenFile;
    }

    @Override
    public void close() {
        channel.close().syncUninterruptibly();
        Shutdown.begin(group);
        try {
            Files.deleteIfExists(tokenFile);
        } catch (IOException ignored) {
            // best effort: the token is useless once the endpoint is gone
        }
    }

}
