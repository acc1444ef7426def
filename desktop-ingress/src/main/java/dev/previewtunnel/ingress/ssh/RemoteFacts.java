package dev.previewtunnel.ingress.ssh;

import java.util.HashMap;
import java.util.Map;

/**
 * What the bootstrap script found on the remote (all paths absolute there): the cache directory of this version,
 * the state directory (keys under it), the run directory for the gateway's socket, the gateway command found on the
 * remote PATH (or given), the remote java and its major version (0: none or unknown), the hash tool, and the
 * SHA-256 of the cached jar (empty: none cached).
 */
record RemoteFacts(String cache, String state, String run, String gateway, String java, int javaMajor,
                   String hashTool, String jarSha256) {

    /** Parses the script's {@code key=value} lines; throws in words on {@code error=} or a cut-off output. */
    static RemoteFacts parse(String host, String output) {
        Map<String, String> kv = new HashMap<>();
        for (String line : output.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                kv.putIfAbsent(line.substring(0, eq), line.substring(eq + 1).strip());
            }
        }
        if (kv.containsKey("error")) {
            throw new SshLinkException("the setup on " + host + " failed: " + kv.get("error"));
        }
        if (!"1".equals(kv.get("end"))) {
            throw new SshLinkException("the setup script on " + host + " did not finish (is sh a POSIX shell there?)");
        }
        int major;
        try {
            major = Integer.parseInt(kv.getOrDefault("java_major", ""));
        } catch (NumberFormatException e) {
            major = 0;
        }
        return new RemoteFacts(kv.get("cache"), kv.get("state"), kv.get("run"), kv.getOrDefault("gateway", ""),
                kv.getOrDefault("java", ""), major, kv.getOrDefault("hash_tool", ""),
                kv.getOrDefault("jar_sha256", ""));
    }

    String jarPath() {
        return cache + "/" + GatewayJar.NAME;
    }
}
