package dev.previewtunnel.ingress.cli;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.SecretFiles;
import dev.previewtunnel.cli.Settings;
import dev.previewtunnel.grants.UnverifiedGrantView;
import dev.previewtunnel.ingress.session.BrowserSession;
import dev.previewtunnel.ingress.session.VirtualHostTakenException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The secrets {@code run} starts with: the connection token and the first session's grants, each in a file
 * (recommended) or on the command line. The values are never settings, never echoed (docs/security.md "Secrets").
 */
final class TokenAndGrantOptions {
    private static final Logger log = LoggerFactory.getLogger(TokenAndGrantOptions.class);

    @Option(names = "--token-file", paramLabel = "FILE",
            description = "File holding the connection token ('env-gateway token issue'). Recommended form: "
                    + "unlike --token, it keeps the token out of ps. Exactly one of --token-file and --token.")
    Path tokenFile;

    @Option(names = "--token", paramLabel = "TOKEN",
            description = "The connection token itself. Visible to other local users in ps: prefer --token-file.")
    String token;

    @Option(names = "--grant-file", paramLabel = "FILE",
            description = "File of grants ('env-gateway grant issue'), one per line; blank lines and lines "
                    + "starting with # are ignored. Recommended form: keeps grants out of ps. Repeatable.")
    List<Path> grantFiles = new ArrayList<>();

    @Option(names = "--grant", paramLabel = "GRANT",
            description = "A grant for one target. Visible to other local users in ps: prefer --grant-file. "
                    + "Repeatable. With the control API off (--no-control) at least one grant is required; "
                    + "otherwise grants can be added later with 'grant add'.")
    List<String> grants = new ArrayList<>();

    /** The --token-file setting (flag, variable or config file: picocli filled it), or null. */
    Path tokenFile() {
        return tokenFile;
    }

    /** The --grant-file settings, in order. */
    List<Path> grantFiles(Settings s) {
        return s.paths("grant-file", grantFiles);
    }

    /** True when grants were given here (--grant or {@code grantPaths}), which then replace the saved ones. */
    boolean grantsGiven(List<Path> grantPaths) {
        return !grants.isEmpty() || !grantPaths.isEmpty();
    }

    /** The connection token, from {@code tokenPath} or --token (exactly one); never echoed. */
    String readToken(CommandSpec spec, Path tokenPath) {
        if (token != null && tokenPath != null) {
            throw Cli.usage(spec, "give either --token-file or --token, not both");
        }
        if (token == null && tokenPath == null) {
            throw Cli.usage(spec, "a connection token is required: --token-file FILE (recommended; "
                    + "'env-gateway token issue' prints one; or PTUN_INGRESS_TOKEN_FILE) or --token TOKEN");
        }
        if (tokenPath != null) {
            return IngressCli.tokenFromFile(spec, tokenPath, "--token-file", "--token-file " + tokenPath);
        }
        return IngressCli.requireToken(spec, token.strip(), "--token");
    }

    /** Adds every grant to the session; returns the granted targets in order ("localhost:5173"). */
    Set<String> attachGrants(CommandSpec spec, BrowserSession session, List<Path> grantPaths, boolean controlOn) {
        Set<String> targets = new LinkedHashSet<>();
        int count = 0;
        for (int i = 0; i < grants.size(); i++) {
            attach(spec, session, grants.get(i).strip(), "--grant #" + (i + 1), targets);
            count++;
        }
        for (Path file : grantPaths) {
            List<String> lines = SecretFiles.readLines(spec, file, "--grant-file");
            for (int i = 0; i < lines.size(); i++) {
                attach(spec, session, lines.get(i), "line " + (i + 1) + " of --grant-file " + file, targets);
                count++;
            }
        }
        if (count == 0 && !controlOn) {
            throw Cli.usage(spec, "at least one grant is required with --no-control: --grant-file FILE "
                    + "(recommended) or --grant GRANT; 'env-gateway grant issue' issues them");
        }
        return targets;
    }

    private static void attach(CommandSpec spec, BrowserSession session, String grant, String where,
                               Set<String> targets) {
        String target;
        try {
            target = session.authorities().add(grant).target().toString();
        } catch (IllegalArgumentException e) {
            throw Cli.usage(spec, where + " is not a readable grant (expected a JWT from 'env-gateway grant "
                    + "issue'); the value is not shown");
        } catch (VirtualHostTakenException e) {
            throw Cli.usage(spec, where + ": " + e.getMessage() + " (with 'grant add --name')");
        }
        targets.add(target);
        UnverifiedGrantView view = UnverifiedGrantView.decode(grant);
        if (view.expiresAt().isBefore(Instant.now())) {
            log.warn("{}: grant {} for {} expired at {}; the gateway will refuse it, issue a new one", where,
                    view.jti(), target, view.expiresAt());
        }
    }
}
