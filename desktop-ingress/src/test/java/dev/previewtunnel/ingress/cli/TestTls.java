package dev.previewtunnel.ingress.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A self-signed certificate for localhost / 127.0.0.1 / ::1 (EC P-256, valid 2000 to 2125) and its key, made for
 * these tests only (openssl ca -selfsign, subjectAltName DNS:localhost, IP:127.0.0.1, IP:::1). Nothing
 * trusts it but the tests that pass it as --gateway-ca.
 */
final class TestTls {
    static final String CERT = """
            -----BEGIN CERTIFICATE-----
            MIIBjDCCATKgAwIBAgICEAAwCgYIKoZIzj0EAwIwFDESMBAGA1UEAwwJbG9jYWxo
            b3N0MCAXDTAwMDEwMTAwMDAwMFoYDzIxMjUwMTAxMDAwMDAwWjAUMRIwEAYDVQQD
            DAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAS8rezyyRXNWldz
            zP0MiKSlnnLMfeCN6tdJuj5SZlnDcz6cQyixdIgUdpaDsLhoqDAzLOP6H8PR9TA6
            REVto5moo3IwcDAsBgNVHREEJTAjgglsb2NhbGhvc3SHBH8AAAGHEAAAAAAAAAAA
            AAAAAAAAAAEwDAYDVR0TAQH/BAIwADATBgNVHSUEDDAKBggrBgEFBQcDATAdBgNV
            HQ4EFgQUdUV1NuGr6SeLZgx5f4f/3d37iLQwCgYIKoZIzj0EAwIDSAAwRQIgVLln
            UysSE4rq4BbGk3lssMD7MUYyvG9jsenK6WAhZ+ECIQCZSdRY7MuHNmSJgOG1I00a
            mFjmcgSN6b2PlH/PVsuyng==
            -----END CERTIFICATE-----
            """;

    static final String KEY = """
            -----BEGIN PRIVATE KEY-----
            MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg/TPn24bLmfJeHKTA
            A3nlZ5DSiRghExdddw8V7PzrV4uhRANCAAS8rezyyRXNWldzzP0MiKSlnnLMfeCN
            6tdJuj5SZlnDcz6cQyixdIgUdpaDsLhoqDAzLOP6H8PR9TA6REVto5mo
            -----END PRIVATE KEY-----
            """;

    private TestTls() {
    }

    static Path writeCert(Path dir) throws IOException {
        return Files.writeString(dir.resolve("gateway-cert.pem"), CERT);
    }

    static Path writeKey(Path dir) throws IOException {
        return Files.writeString(dir.resolve("gateway-key.pem"), KEY);
    }
}
