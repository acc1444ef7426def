package dev.previewtunnel.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** nginx as the benchmark's plain relays run it: in the foreground, its config written under a prefix of its own. */
final class Nginx {
    private Nginx() {
    }

    /** Writes {@code config} to {@code prefix}/nginx.conf and starts nginx on it; its output goes to {@code logDir}. */
    static Proc start(Path nginx, Path prefix, String name, Path logDir, String config) throws IOException {
        Path conf = prefix.resolve("nginx.conf");
        Files.writeString(conf, config);
        return Proc.start(name, List.of(nginx.toString(), "-p", prefix.toString(), "-c", conf.toString(), "-g",
                "daemon off;"), logDir, null);
    }
}
