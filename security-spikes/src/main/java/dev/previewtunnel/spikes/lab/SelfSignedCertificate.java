package dev.previewtunnel.spikes.lab;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Base64;
import java.util.List;

/**
 * A self-signed certificate for {@code localhost} / {@code 127.0.0.1}, made by the JDK's own {@code keytool}
 * (EC P-256, valid 2 days) and written as PEM for nginx or the gateway's {@code --tls-cert/--tls-key}; the key
 * file is owner-only. The ingress trusts exactly this certificate.
 */
public record SelfSignedCertificate(Path certPem, Path keyPem, X509Certificate certificate) {
    private static final String PASS = "ptun-test";

    public static SelfSignedCertificate create(Path dir) {
        Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
        Path store = dir.resolve("relay.p12");
        Processes.runOk(List.of(keytool.toString(), "-genkeypair", "-alias", "relay", "-keyalg", "EC",
                "-groupname", "secp256r1", "-sigalg", "SHA256withECDSA", "-dname", "CN=localhost",
                "-ext", "SAN=dns:localhost,ip:127.0.0.1", "-validity", "2", "-keystore", store.toString(),
                "-storetype", "PKCS12", "-storepass", PASS, "-keypass", PASS), dir, Duration.ofSeconds(60));
        try (InputStream in = Files.newInputStream(store)) {
            KeyStore ks = KeyStore.getInstance("PKCS12");
            ks.load(in, PASS.toCharArray());
            Key key = ks.getKey("relay", PASS.toCharArray());
            X509Certificate cert = (X509Certificate) ks.getCertificate("relay");
            Path certPem = dir.resolve("relay-cert.pem");
            Path keyPem = dir.resolve("relay-key.pem");
            Files.writeString(certPem, pem("CERTIFICATE", cert.getEncoded()), StandardCharsets.US_ASCII);
            Files.createFile(keyPem, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.writeString(keyPem, pem("PRIVATE KEY", key.getEncoded()), StandardCharsets.US_ASCII);
            return new SelfSignedCertificate(certPem, keyPem, cert);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n"
                + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
                + "\n-----END " + type + "-----\n";
    }
}
