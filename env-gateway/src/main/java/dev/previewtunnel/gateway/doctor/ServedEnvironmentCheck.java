package dev.previewtunnel.gateway.doctor;

import dev.previewtunnel.cli.Cli;
import dev.previewtunnel.cli.DoctorReport;
import dev.previewtunnel.cli.ExitCodes;

/** {@code env}: the environment serve serves is set; every token and grant must name it. */
public record ServedEnvironmentCheck(String environment) {

    public void run(DoctorReport report) {
        if (environment == null) {
            report.fail("env", ExitCodes.USAGE, "no environment set: give --env ENV (or PTUN_GATEWAY_ENV, or \"env\" "
                    + "in the config file); tokens and grants must name it");
        } else {
            report.ok("env", "serves environment '" + Cli.shown(environment) + "'");
        }
    }
}
