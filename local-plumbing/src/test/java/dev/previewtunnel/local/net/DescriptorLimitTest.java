package dev.previewtunnel.local.net;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DescriptorLimitTest {
    private static final String HEADER = "Limit                     Soft Limit           Hard Limit           Units     ";

    @Test
    void theProcFileAndTheMxBeanTellTheSameLimit() throws IOException {
        Path limits = Path.of("/proc/self/limits");
        assertTrue(Files.isReadable(limits), "CI runs on Linux, which has " + limits);
        OptionalLong fromProc = DescriptorLimit.fromProcLimits(Files.readAllLines(limits));
        assertTrue(fromProc.isPresent(), "the Max open files row of " + limits);
        assertEquals(DescriptorLimit.fromMxBean(), fromProc.getAsLong(), "the MXBean is the oracle");
        assertEquals(fromProc.getAsLong(), DescriptorLimit.current());
        assertEquals(fromProc.getAsLong(), ConnectionBudget.fdLimit());
    }

    @Test
    void theSoftColumnOfTheMaxOpenFilesRow() {
        assertEquals(OptionalLong.of(1024), DescriptorLimit.fromProcLimits(List.of(HEADER,
                "Max cpu time              unlimited            unlimited            seconds   ",
                "Max open files            1024                 524288               files     ",
                "Max locked memory         8388608              8388608              bytes     ")));
        assertEquals(OptionalLong.of(Long.MAX_VALUE), DescriptorLimit.fromProcLimits(List.of(HEADER,
                "Max open files            unlimited            unlimited            files     ")));
    }

    @Test
    void aMissingOrUnreadableRowTellsNothing() {
        assertEquals(OptionalLong.empty(), DescriptorLimit.fromProcLimits(List.of()));
        assertEquals(OptionalLong.empty(), DescriptorLimit.fromProcLimits(List.of(HEADER,
                "Max processes             127431               127431               processes ")));
        assertEquals(OptionalLong.empty(), DescriptorLimit.fromProcLimits(List.of(
                "Max open files            lots                 524288               files     ")));
        assertEquals(OptionalLong.empty(), DescriptorLimit.fromProcLimits(List.of("Max open files")));
        assertEquals(OptionalLong.empty(), DescriptorLimit.fromProcLimits(List.of(
                "Max open files            -5                   524288               files     ")));
    }
}
