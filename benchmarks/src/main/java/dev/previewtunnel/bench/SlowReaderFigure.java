package dev.previewtunnel.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

/** Figure 6: one stream read at a slow fixed pace, blocking NIO on the runner's thread. */
final class SlowReaderFigure {
    private SlowReaderFigure() {
    }

    /** One endless-source stream read at a fixed slow pace; memory of both sides watched over time. */
    static Map<String, Object> measure(Route route, Config c, MemWatch mem) throws IOException {
        Map<String, Object> out = new LinkedHashMap<>();
        mem.begin();
        List<Map<String, Object>> timeline = new ArrayList<>();
        try (SocketChannel ch = route.open(2)) {
            ByteBuffer buf = ByteBuffer.allocateDirect(64 * 1024);
            long t0 = System.nanoTime();
            long deadline = t0 + c.slowMaxMillis * 1_000_000L;
            Route.command(ch, BenchTarget.SOURCE, c.slowBytes);
            long got = 0;
            long nextSample = t0;
            while (got < c.slowBytes) {
                long now = System.nanoTime();
                if (now > deadline) {
                    break;
                }
                if (now >= nextSample) {
                    long[] rss = mem.rssNow();
                    Map<String, Object> s = new LinkedHashMap<>();
                    s.put("t", Stats.round((now - t0) / 1e9, 1));
                    s.put("bytes", got);
                    s.put("envRssMiB", MemWatch.mib(rss[0]));
                    s.put("deskRssMiB", MemWatch.mib(rss[1]));
                    timeline.add(s);
                    nextSample += 1_000_000_000L;
                }
                long due = t0 + (long) (got * 1e9 / c.slowBytesPerSecond);
                if (due > now) {
                    LockSupport.parkNanos(due - now);
                }
                buf.clear();
                int n = ch.read(buf);
                if (n < 0) {
                    break;
                }
                got += n;
            }
            long t1 = System.nanoTime();
            out.put("targetBytes", c.slowBytes);
            out.put("bytesRead", got);
            out.put("seconds", Stats.round((t1 - t0) / 1e9, 2));
            out.put("readerMiBps", Stats.round(got / 1048576.0 / ((t1 - t0) / 1e9), 1));
            out.put("memory", mem.end()); // while the stream is still open and its buffers full
            out.put("rssTimeline", timeline);
            if (got < c.slowBytes) {
                Route.finish(ch);
            }
        }
        return out;
    }
}
