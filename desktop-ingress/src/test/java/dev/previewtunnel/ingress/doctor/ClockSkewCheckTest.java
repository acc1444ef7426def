package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.DoctorReport.Status;
import dev.previewtunnel.cli.ExitCodes;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The skew thresholds (5 s warn, 30 s fail: the gateway's grant allowance) and the header's absence or garbage. */
class ClockSkewCheckTest {
    private static final Instant THEIRS = Instant.parse("2026-12-02T03:00:00Z");

    private static String date(Instant t) {
        return DateTimeFormatter.RFC_1123_DATE_TIME.format(t.atOffset(ZoneOffset.UTC));
    }

    private static DoctorReport.Check judge(GatewayLabel g, String date, Instant ours) {
        DoctorReport report = Reports.quiet();
        new ClockSkewCheck(g, date, ours).run(report);
        return Reports.only(report);
    }

    @Test
    void withinFiveSecondsIsOk() {
        DoctorReport.Check c = judge(GatewayLabel.DEFAULT, date(THEIRS), THEIRS.plusMillis(4_900));
        assertEquals(Status.OK, c.status(), c::toString);
        assertEquals("clock skew against the gateway: +4 s", c.message());
    }

    @Test
    void beyondFiveSecondsWarnsAndBeyondThirtyFailsAsRefused() {
        DoctorReport.Check warn = judge(GatewayLabel.DEFAULT, date(THEIRS), THEIRS.minusSeconds(10));
        assertEquals(Status.WARN, warn.status(), warn::toString);
        assertTrue(warn.message().startsWith("this desktop's clock is 10 s behind the gateway's"), warn.message());

        DoctorReport.Check fail = judge(GatewayLabel.DEFAULT, date(THEIRS), THEIRS.plusSeconds(31));
        assertEquals(Status.FAIL, fail.status(), fail::toString);
        assertEquals(ExitCodes.REFUSED, fail.exitCode());
        assertTrue(fail.message().startsWith("this desktop's clock is 31 s ahead of the gateway's:"), fail.message());
        assertEquals("clock", fail.id());
    }

    @Test
    void anEnvironmentsGatewayHasItsOwnCheckAndName() {
        DoctorReport.Check c = judge(new GatewayLabel("staging"), date(THEIRS), THEIRS.plusSeconds(60));
        assertEquals("environment-clock", c.id());
        assertTrue(c.message().contains("ahead of the clock of the gateway of environment 'staging'"), c.message());
    }

    @Test
    void noOrAnUnreadableDateHeaderOnlyWarns() {
        DoctorReport.Check none = judge(GatewayLabel.DEFAULT, null, THEIRS);
        assertEquals(Status.WARN, none.status());
        assertTrue(none.message().contains("sent no Date header"), none.message());
        DoctorReport.Check garbage = judge(GatewayLabel.DEFAULT, "yesterday-ish", THEIRS);
        assertEquals(Status.WARN, garbage.status());
        assertTrue(garbage.message().contains("is unreadable"), garbage.message());
    }
}
