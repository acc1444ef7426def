package dev.previewtunnel.spikes.e2e;

/** Closes everything given, in order, whatever fails; rethrows the first failure afterwards. */
final class Closer {
    private Closer() {
    }

    static void closeAll(AutoCloseable... resources) {
        Throwable first = null;
        for (AutoCloseable r : resources) {
            if (r == null) {
                continue;
            }
            try {
                r.close();
            } catch (Throwable t) {
                if (first == null) {
                    first = t;
                } else {
                    first.addSuppressed(t);
                }
            }
        }
        if (first instanceof RuntimeException re) {
            throw re;
        }
        if (first instanceof Error err) {
            throw err;
        }
        if (first != null) {
            throw new IllegalStateException(first);
        }
    }
}
