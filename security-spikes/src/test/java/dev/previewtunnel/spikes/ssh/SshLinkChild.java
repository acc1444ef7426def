package dev.previewtunnel.spikes.ssh;

import dev.previewtunnel.ingress.ssh.GatewayControl;
import dev.previewtunnel.ingress.ssh.GatewayJar;
import dev.previewtunnel.ingress.ssh.RemoteSetup;
import dev.previewtunnel.ingress.ssh.SshDestination;
import dev.previewtunnel.ingress.ssh.SshLink;
import dev.previewtunnel.ingress.ssh.SshOptions;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A desktop in a JVM of its own, for a test to SIGKILL: starts a link, prints {@code up SOCKET} once it is up, and
 * waits. Arguments: ssh binary, identity, user, port, state directory, version, then the ssh options.
 */
public final class SshLinkChild {
    private SshLinkChild() {
    }

    public static void main(String[] args) throws Exception {
        SshOptions ssh = new SshOptions(Path.of(args[0]), Path.of(args[1]), List.of(args).subList(6, args.length));
        SshLink link = SshLink.start(new SshDestination(args[2], "127.0.0.1", Integer.parseInt(args[3])), ssh,
                new RemoteSetup(null, null, GatewayJar.locate(null), args[5], "e"), Path.of(args[4]),
                new SshLink.Listener() {
                    @Override
                    public void up(GatewayControl control) {
                    }

                    @Override
                    public void down(String why) {
                    }
                });
        link.firstUp().get(120, TimeUnit.SECONDS);
        System.out.println("up " + link.remoteSocket());
        System.out.flush();
        Thread.sleep(TimeUnit.MINUTES.toMillis(10));
    }
}
