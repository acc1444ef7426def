package dev.previewtunnel.gateway.hostile;

import dev.previewtunnel.gateway.cli.GatewayMain;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A program for {@link FatalErrorExitTest}: the real gateway ({@code GatewayMain} with the given arguments) plus one
 * thread that, once the file named by {@code -Dhog.trigger} exists, allocates heap until it runs out. Without
 * {@code -XX:+ExitOnOutOfMemoryError} only that thread dies and the gateway lives on with an exhausted heap (the
 * zombie of issue 16, item 2); with the shipped flag the process ends. Test sources only.
 */
public final class HeapHogGatewayMain {
    public static void main(String[] args) throws Exception {
        Path trigger = Path.of(System.getProperty("hog.trigger"));
        Thread hog = new Thread(() -> {
            try {
                while (!Files.exists(trigger)) {
                    Thread.sleep(20);
                }
                List<long[]> held = new ArrayList<>();
                while (true) {
                    held.add(new long[128 * 1024]); // 1 MiB at a time, never released
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "heap-hog");
        hog.setDaemon(true);
        hog.start();
        GatewayMain.main(args);
    }
}
