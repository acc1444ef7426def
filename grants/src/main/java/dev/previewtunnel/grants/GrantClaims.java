package dev.previewtunnel.grants;

/** Wire names shared by issuer, verifier and the unverified view. Changing any of them breaks every deployed grant. */
public final class GrantClaims {
    /** JWS {@code typ} of a grant / a connection token. */
    public static final String TYP_GRANT = "ptun-grant+jwt";
    public static final String TYP_TOKEN = "ptun-token+jwt";
    /** {@code aud} of a grant / a connection token: distinct so neither can stand in for the other. */
    public static final String AUD_GRANT = "ptun-grant";
    public static final String AUD_CONNECT = "ptun-connect";
    public static final String ISSUER = "ptun";
    /** The only signature algorithm accepted. */
    public static final String ALG = "EdDSA";

    public static final String ENV = "env";
    public static final String SESSION = "sid";
    public static final String HOST = "host";
    public static final String PORT = "port";
    public static final String PROTOCOL = "proto";
    public static final String PROVIDER = "prv";
    public static final String THREAD = "thr";

    private GrantClaims() {
    }
}
