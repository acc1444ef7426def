package dev.previewtunnel.ingress.browser;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.util.NetUtil;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Answers the ingress's 407 for every tab and window of one browser: {@code Fetch} is enabled on the browser target
 * itself (one switch that covers targets opened later, with no attach race), paused requests are continued at once,
 * a {@code Proxy} challenge from our proxy gets the session's credential and any other challenge (a site's own 401,
 * another proxy) {@code Default}: the browser's own prompt, never our credential; a repeat from our proxy for a
 * request already answered {@code CancelAuth}. Only documents are intercepted:
 * a page's subresources follow it and find the credential in Chromium's proxy auth cache (docs/desktop-ingress.md
 * "Launching the browser": the cost measured). The credential is never logged or thrown.
 */
final class ProxyCredentialAnswerer {
    private static final int ANSWERED_KEPT = 256;

    private final DevTools devTools;
    private final InetSocketAddress proxy;
    private final String username;
    private final String password;
    private final AtomicInteger proxyAnswers = new AtomicInteger();
    private final AtomicInteger otherChallenges = new AtomicInteger();
    private final AtomicInteger pausedRequests = new AtomicInteger();
    private final AtomicInteger refusedRepeats = new AtomicInteger();
    /**
     * Requests already given the credential: a second challenge for one of them means the proxy refused it (a
     * rotated or closed session), and answering again would loop 407s; it gets {@code CancelAuth}, so the browser
     * shows the ingress's 407 page. Bounded (documents only, the newest kept); touched only on the event thread.
     */
    private final Set<String> answered = Collections.newSetFromMap(new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
            return size() > ANSWERED_KEPT;
        }
    });

    ProxyCredentialAnswerer(DevTools devTools, InetSocketAddress proxy, String username, String password) {
        this.devTools = devTools;
        this.proxy = proxy;
        this.username = username;
        this.password = password;
    }

    /** Registers the handlers, then enables interception; returns once the browser has acknowledged it. */
    void start() {
        devTools.on("Fetch.requestPaused", this::continuePaused);
        devTools.on("Fetch.authRequired", this::answer);
        ObjectNode fetch = DevTools.params().put("handleAuthRequests", true);
        fetch.putArray("patterns").addObject().put("urlPattern", "*").put("resourceType", "Document");
        devTools.send("Fetch.enable", fetch);
    }

    private void continuePaused(JsonNode params, String sessionId) {
        pausedRequests.incrementAndGet();
        devTools.sendAsync("Fetch.continueRequest",
                DevTools.params().put("requestId", params.path("requestId").asText()), sessionId);
    }

    private void answer(JsonNode params, String sessionId) {
        String requestId = params.path("requestId").asText();
        ObjectNode answer = DevTools.params().put("requestId", requestId);
        ObjectNode response = answer.putObject("authChallengeResponse");
        if (isOurProxy(params.path("authChallenge"))) {
            if (answered.add(requestId)) {
                proxyAnswers.incrementAndGet();
                response.put("response", "ProvideCredentials").put("username", username).put("password", password);
            } else {
                refusedRepeats.incrementAndGet();
                response.put("response", "CancelAuth");
            }
        } else {
            otherChallenges.incrementAndGet();
            response.put("response", "Default");
        }
        devTools.sendAsync("Fetch.continueWithAuth", answer, sessionId);
    }

    /**
     * Our proxy's challenge: source {@code Proxy} and origin {@code http://ADDRESS:PORT} naming the address we
     * configured (compared as addresses: Chromium writes {@code [::1]} where Java writes {@code 0:0:0:0:0:0:0:1}).
     */
    boolean isOurProxy(JsonNode challenge) {
        if (!"Proxy".equals(challenge.path("source").asText())) {
            return false;
        }
        try {
            URI origin = new URI(challenge.path("origin").asText());
            String host = origin.getHost();
            if (host == null || origin.getPort() != proxy.getPort() || proxy.getAddress() == null) {
                return false;
            }
            String literal = host.startsWith("[") ? host.substring(1, host.length() - 1) : host;
            byte[] address = NetUtil.createByteArrayFromIpAddressString(literal); // null for a name: no DNS here
            return address != null && Arrays.equals(address, proxy.getAddress().getAddress());
        } catch (URISyntaxException e) {
            return false;
        }
    }

    int proxyAnswers() {
        return proxyAnswers.get();
    }

    int otherChallenges() {
        return otherChallenges.get();
    }

    /** Challenges our proxy repeated for a request already answered (the credential refused). */
    int refusedRepeats() {
        return refusedRepeats.get();
    }

    int pausedRequests() {
        return pausedRequests.get();
    }
}
