package dev.previewtunnel.ingress.ssh;

import java.nio.file.Path;
import java.util.List;

/**
 * How to run the system {@code ssh}: the binary (null: {@code ssh} from PATH), {@code -i IDENTITY} (null: none) and
 * {@code --ssh-option KEY=VALUE} values, each passed as {@code -o KEY=VALUE} before the link's own defaults (ssh takes
 * the first value of an option, so the user's win over ours, except the control-socket options the link needs).
 */
public record SshOptions(Path sshBinary, Path identity, List<String> options) {
    public SshOptions {
        options = options == null ? List.of() : List.copyOf(options);
        for (String o : options) {
            int eq = o.indexOf('=');
            if (eq <= 0 || o.startsWith("-") || o.chars().anyMatch(Character::isISOControl)) {
                throw new IllegalArgumentException("an ssh option is KEY=VALUE (e.g. ProxyJump=bastion), got '"
                        + o.replaceAll("\\p{Cntrl}", "?") + "'");
            }
        }
    }

    /** ssh from PATH, no identity, no options. */
    public static SshOptions defaults() {
        return new SshOptions(null, null, List.of());
    }
}
