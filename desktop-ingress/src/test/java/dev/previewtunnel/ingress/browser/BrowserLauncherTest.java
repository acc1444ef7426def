package dev.previewtunnel.ingress.browser;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A real headless Chromium launched as {@code open} launches it, against a small authenticating proxy and a local
 * target: pages load with no prompt in the first tab and in tabs opened later, a site's own 401 never gets the
 * proxy credential, the process and its exit are tracked, and the profile persists. A missing Chromium fails.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class BrowserLauncherTest {
    static final Path CHROMIUM = Path.of("/usr/bin/chromium");
    static final List<String> HEADLESS = List.of("--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync");
    static final Duration WAIT = Duration.ofSeconds(30);
    static final String USER = "ptun-test";
    static final String PASSWORD = "s3cret-" + Long.toHexString(System.nanoTime()) + "-never-shown";

    @TempDir
    Path dir;
    TestTarget target;
    AuthenticatingProxy proxy;

    @BeforeEach
    void start() throws IOException {
        target = new TestTarget();
        proxy = new AuthenticatingProxy(0, USER, PASSWORD);
    }

    @AfterEach
    void stop() throws IOException {
        proxy.close();
        target.close();
    }

    LaunchedBrowser launch(Path profile, String... urls) {
        return BrowserLauncher.launch(BrowserLauncher.find(CHROMIUM), profile, proxy.address(), USER, PASSWORD,
                HEADLESS, java.util.Arrays.stream(urls).map(URI::create).toList(), WAIT);
    }

    /** Launches on {@code http://localhost:PORT/PATH} and waits until that page has loaded. */
    LaunchedBrowser launchShowing(Path profile, String path) {
        LaunchedBrowser browser = launch(profile, url("localhost", path));
        try {
            new BrowserPages(browser).awaitTitle("page" + path, WAIT);
            return browser;
        } catch (RuntimeException | AssertionError e) {
            browser.close();
            throw e;
        }
    }

    String url(String host, String path) {
        return "http://" + host + ":" + target.port() + path;
    }

    void assertRelayed(AuthenticatingProxy through, String host, String path) {
        assertTrue(through.relayed().contains(host + ":" + target.port() + path), through.relayed().toString());
    }

    @Test
    void firstTabAndLaterTabsLoadThroughTheProxyWithNoPrompt() throws IOException {
        Path profile = dir.resolve("profile");
        try (LaunchedBrowser browser = launchShowing(profile, "/first")) {
            BrowserPages pages = new BrowserPages(browser);
            assertRelayed(proxy, "localhost", "/first");
            assertTrue(browser.answerer().proxyAnswers() >= 1, "the 407 was answered over DevTools");

            // *.localhost goes through the proxy too with <-loopback> (the proxy is the only way it reaches the target)
            pages.openTab(url("preview.localhost", "/later"));
            pages.awaitTitle("page/later", WAIT);
            assertRelayed(proxy, "preview.localhost", "/later");
            assertTrue(target.authorizations().isEmpty(), "no Authorization reached the target");

            // Subresources are not intercepted: they find the answered credential in Chromium's proxy auth cache.
            pages.openTab(url("localhost", "/many"));
            pages.awaitTitle("many-loaded:" + TestTarget.SUBRESOURCES, WAIT);
            assertEquals(3, browser.answerer().pausedRequests(), "only the three documents were paused");
        }
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(profile)));
    }

    @Test
    void aNewWindowAndAnIncognitoWindowLoadToo() {
        Path profile = dir.resolve("profile");
        try (LaunchedBrowser browser = launchShowing(profile, "/first")) {
            BrowserPages pages = new BrowserPages(browser);
            pages.openWindow(url("localhost", "/window"), false);
            pages.awaitTitle("page/window", WAIT);
            int answered = browser.answerer().proxyAnswers();
            // A new browser context starts with an empty proxy auth cache: its first document meets a 407 again.
            pages.openWindow(url("localhost", "/incognito"), true);
            pages.awaitTitle("page/incognito", WAIT);
            assertRelayed(proxy, "localhost", "/incognito");
            assertTrue(browser.answerer().proxyAnswers() > answered, "the new context's 407 was answered");
        }
    }

    @Test
    void aSitesOwn401GetsTheBrowsersDefaultNotTheProxyCredential() {
        Path profile = dir.resolve("profile");
        try (LaunchedBrowser browser = launch(profile, url("localhost", "/private"))) {
            BrowserPages pages = new BrowserPages(browser);
            pages.await("the site's own challenge (pages: %s)", WAIT, () -> browser.answerer().otherChallenges() >= 1);
            // Headless has no prompt to show; a later page loading is the barrier after which the 401 is settled.
            pages.openTab(url("localhost", "/after-401"));
            pages.awaitTitle("page/after-401", WAIT);
            assertTrue(target.paths().contains("/private"), target.paths().toString());
            assertTrue(target.authorizations().isEmpty(), "the site got no credential: " + target.authorizations().size());
        }
    }

    @Test
    void aRestartedProxyOnTheSamePortIsAnsweredToo() throws IOException {
        Path profile = dir.resolve("profile");
        try (LaunchedBrowser browser = launchShowing(profile, "/before")) {
            BrowserPages pages = new BrowserPages(browser);
            int port = proxy.address().getPort();
            proxy.close();
            proxy = new AuthenticatingProxy(port, USER, PASSWORD);
            pages.openTab(url("localhost", "/after"));
            pages.awaitTitle("page/after", WAIT);
            assertRelayed(proxy, "localhost", "/after");
        }
    }

    @Test
    void aRefusedCredentialIsNotOfferedAgainForTheSameRequest() throws IOException {
        proxy.close();
        proxy = new AuthenticatingProxy(0, USER, "another-password");
        Path profile = dir.resolve("profile");
        try (LaunchedBrowser browser = launch(profile, url("localhost", "/refused"))) {
            BrowserPages pages = new BrowserPages(browser);
            pages.await("the repeated challenge cancelled (pages: %s)", WAIT,
                    () -> browser.answerer().refusedRepeats() >= 1);
            assertEquals(1, browser.answerer().proxyAnswers(), "the credential was offered once");
            assertTrue(proxy.relayed().isEmpty(), proxy.relayed().toString());
        }
    }

    @Test
    void exitedCompletesWhenTheBrowserIsKilledAndTheProfileServesAgain() throws Exception {
        Path profile = dir.resolve("profile");
        Path socketDir;
        try (LaunchedBrowser browser = launch(profile)) {
            assertFalse(browser.exited().isDone());
            socketDir = Files.readSymbolicLink(profile.resolve(SingletonSocketDir.SOCKET)).getParent();
            assertTrue(Files.isDirectory(socketDir), "Chromium's socket directory " + socketDir);
            ProcessHandle.of(browser.pid()).orElseThrow().destroyForcibly();
            browser.exited().get(WAIT.toSeconds(), TimeUnit.SECONDS);
            assertTrue(Files.isDirectory(socketDir), "a killed Chromium leaves its socket directory behind");
        }
        // The killed browser left its profile lock behind; close() removed what it left in TMPDIR.
        assertTrue(Files.isSymbolicLink(profile.resolve("SingletonLock")), "a stale SingletonLock");
        assertFalse(Files.exists(socketDir, LinkOption.NOFOLLOW_LINKS), socketDir + " removed");
        launchShowing(profile, "/again").close(); // throws unless the page loads
    }

    @Test
    void aSecondLaunchOnAProfileInUseLeavesTheFirstBrowsersSocketAlone() throws Exception {
        // The second Chromium finds the first on the profile and hands over or gives up; either way its launch
        // fails, and what the failure path cleans up must not be the running browser's socket (the lock names
        // the first).
        Path profile = dir.resolve("profile");
        try (LaunchedBrowser first = launch(profile)) {
            Path socketDir = Files.readSymbolicLink(profile.resolve(SingletonSocketDir.SOCKET)).getParent();
            assertThrows(RuntimeException.class, () -> launch(profile).close());
            assertTrue(Files.exists(socketDir.resolve(SingletonSocketDir.SOCKET)), "the first browser's socket stays");
            assertFalse(first.exited().isDone(), "the first browser runs on");
        }
    }

    @Test
    void theBrowserExitsWhenTheLaunchersPipeCloses() throws Exception {
        // As when the process that launched it dies: the browser reads end of file on its DevTools pipe.
        try (LaunchedBrowser browser = launch(dir.resolve("profile"))) {
            browser.devTools().close();
            browser.exited().get(WAIT.toSeconds(), TimeUnit.SECONDS);
        }
    }

    @Test
    void closeLeavesNoProcessAndTheProfileServesASecondLaunch() throws IOException {
        Path profile = dir.resolve("profile");
        long pid;
        List<ProcessHandle> children;
        Path socketDir;
        try (LaunchedBrowser browser = launchShowing(profile, "/one")) {
            socketDir = Files.readSymbolicLink(profile.resolve(SingletonSocketDir.SOCKET)).getParent();
            pid = browser.pid();
            children = ProcessHandle.of(pid).orElseThrow().descendants().toList();
            assertFalse(children.isEmpty(), "Chromium runs helper processes");
        }
        assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false), "the browser is gone");
        children.forEach(c -> assertFalse(c.isAlive(), "helper " + c.pid() + " is gone"));
        assertTrue(Files.isDirectory(profile.resolve("Default")), "the profile persists");
        assertFalse(Files.exists(socketDir, LinkOption.NOFOLLOW_LINKS), "nothing left in TMPDIR: " + socketDir);

        launchShowing(profile, "/two").close(); // throws unless the page loads
    }

    @Test
    void theCredentialIsNeitherOnTheCommandLineNorInTheBrowsersOutputAndNoDevToolsPortIsOpen() throws IOException {
        Path profile = dir.resolve("profile");
        try (LaunchedBrowser browser = launchShowing(profile, "/x")) {
            String cmdline = Files.readString(Path.of("/proc", Long.toString(browser.pid()), "cmdline"));
            assertTrue(cmdline.contains("--proxy-server=http://127.0.0.1:" + proxy.address().getPort()), "proxy flag");
            assertTrue(cmdline.contains("--remote-debugging-pipe") && !cmdline.contains("--remote-debugging-port"),
                    "DevTools over the pipe, no port");
            assertFalse(Files.exists(profile.resolve("DevToolsActivePort")), "no DevTools port was opened");
            assertFalse(cmdline.contains(PASSWORD), "no credential on the command line");
        }
        assertFalse(Files.readString(profile.resolve(BrowserLauncher.LOG_FILE)).contains(PASSWORD),
                "no credential in the browser's output");
    }
}
