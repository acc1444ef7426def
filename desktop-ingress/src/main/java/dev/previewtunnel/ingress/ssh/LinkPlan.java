package dev.previewtunnel.ingress.ssh;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * What every connect attempt of one link shares: where to connect and how, what to run there, the local control
 * socket and gateway log, the local forward port (picked once, so the gateway URI never changes), this link's id
 * (names the remote socket) and the SHA-256 of the jar to upload.
 *
 * @param batch no terminal: ssh may not prompt (BatchMode=yes on the master)
 */
record LinkPlan(SshDestination dest, SshOptions ssh, RemoteSetup setup, Path controlPath, Path gatewayLog,
                int localPort, String linkId, boolean batch, String jarSha256) {

    static String sha256(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            byte[] buf = new byte[64 * 1024];
            for (int n; (n = in.read(buf)) >= 0; ) {
                md.update(buf, 0, n);
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (IOException e) {
            throw new SshLinkException("cannot read the gateway jar " + file + ": " + e.getMessage(), e);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    SshCommand commands() {
        return new SshCommand(dest, ssh, controlPath, batch);
    }
}
