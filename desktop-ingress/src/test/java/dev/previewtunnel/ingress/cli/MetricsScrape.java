package dev.previewtunnel.ingress.cli;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Reads a Prometheus endpoint (the ingress's or the gateway's) the way the metrics tests check it. */
final class MetricsScrape {
    private static final HttpClient CLIENT = HttpClient.newHttpClient();

    private MetricsScrape() {
    }

    /** The exposition text; the endpoint must answer 200. */
    static String scrape(String url) {
        try {
            HttpResponse<String> r = CLIENT.send(HttpRequest.newBuilder(URI.create(url))
                    .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode());
            return r.body();
        } catch (IOException e) {
            throw new AssertionError("scrape " + url, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while scraping " + url, e);
        }
    }

    /** The value of one sample ({@code name} or {@code name{labels}}), or -1 when absent. */
    static double value(String exposition, String sample) {
        for (String line : exposition.lines().toList()) {
            if (line.startsWith(sample + " ")) {
                return Double.parseDouble(line.substring(sample.length() + 1).strip());
            }
        }
        return -1;
    }

    /** The sum of the samples whose line starts with {@code prefix} (a name and some of its labels). */
    static double sum(String exposition, String prefix) {
        double total = 0;
        for (String line : exposition.lines().toList()) {
            if (line.startsWith(prefix)) {
                total += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return total;
    }
}
