package dev.previewtunnel.ingress.doctor;

import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;

import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;

/**
 * {@code clock} / {@code environment-clock}: this desktop's clock against a gateway's, from the Date header of its
 * answer to the upgrade. Beyond 30 s the gateway's grant checks (30 s allowance) and the expiry warnings and
 * refreshes here disagree.
 *
 * @param date       the gateway's Date header, or null
 * @param receivedAt when the answer arrived, by this desktop's clock
 */
public record ClockSkewCheck(GatewayLabel gateway, String date, Instant receivedAt) {
    static final long SKEW_FAIL_SECONDS = 30;
    static final long SKEW_WARN_SECONDS = 5;

    public void run(DoctorReport report) {
        String check = gateway.check("clock");
        if (date == null) {
            report.warn(check, gateway.who() + " sent no Date header (an older gateway): clock skew not measured");
            return;
        }
        Instant theirs;
        try {
            theirs = ZonedDateTime.parse(date, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
        } catch (DateTimeParseException e) {
            report.warn(check, "the Date header of " + gateway.who() + " is unreadable: clock skew not measured");
            return;
        }
        // The header has whole seconds and was written up to a round trip before we read it: allow 1 s.
        long skew = ChronoUnit.SECONDS.between(theirs, receivedAt.truncatedTo(ChronoUnit.SECONDS));
        String direction = skew > 0 ? "ahead of" : "behind";
        long abs = Math.abs(skew);
        if (abs > SKEW_FAIL_SECONDS) {
            report.fail(check, ExitCodes.REFUSED, "this desktop's clock is " + abs + " s " + direction + " "
                    + gateway.whose() + ": grant expiry warnings and refreshes here disagree with the gateway, and "
                    + "grants issued here would look expired or not yet valid there (30 s allowance); turn on NTP "
                    + "(timedatectl set-ntp true) on both");
        } else if (abs > SKEW_WARN_SECONDS) {
            report.warn(check, "this desktop's clock is " + abs + " s " + direction + " " + gateway.whose()
                    + " (within the 30 s allowance); turn on NTP");
        } else {
            report.ok(check, "clock skew against " + gateway.who() + ": " + (skew >= 0 ? "+" : "") + skew + " s");
        }
    }
}
