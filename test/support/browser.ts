/**
 * Debian's chromium for browser tests, driven by playwright-core (which ships no browser and never
 * downloads one). The browser is located, not installed: `.ci/run` installs the `chromium` package
 * when it is missing. A page may reach only the origin under test: every other request is aborted
 * and recorded, so a test can say nothing left loopback.
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from "playwright-core";

const CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];

/** CHROMIUM_PATH, else Debian's binary. */
export function findChromium(): string | undefined {
  const wanted = process.env.CHROMIUM_PATH;
  if (wanted) return existsSync(wanted) ? wanted : undefined;
  return CANDIDATES.find((path) => existsSync(path));
}

/** CI sets CI=true: there a missing browser fails the run instead of skipping the test. */
export const inCi = (): boolean => !["", "0", "false"].includes((process.env.CI ?? "").toLowerCase());

export const NO_CHROMIUM = `no chromium found (CHROMIUM_PATH or ${CANDIDATES.join(", ")}): install Debian's package (apt-get install -y chromium; .ci/run does it as root) or set CHROMIUM_PATH`;

export interface BrowserSession {
  readonly browser: Browser;
  readonly context: BrowserContext;
  readonly page: Page;
  /** Requests to anything but `origin`, aborted. */
  readonly blocked: string[];
  /** Uncaught page errors and console errors (a CSP violation among them). */
  readonly problems: string[];
  close(): Promise<void>;
}

/**
 * Headless with the flags that keep chromium's own traffic (component updates, sync, background
 * fetches, QUIC) from leaving the machine; playwright passes --no-sandbox, which root needs.
 */
export async function openBrowser(executablePath: string, origin: string): Promise<BrowserSession> {
  const browser = await chromium.launch({
    executablePath,
    headless: true,
    args: ["--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const blocked: string[] = [];
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (new URL(url).origin === origin) return route.continue();
    blocked.push(url);
    return route.abort("blockedbyclient");
  });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  return { browser, context, page, blocked, problems, close: () => browser.close() };
}

/** Screenshots are kept as test artefacts in test-artifacts/<suite>/ (gitignored): of a page, or of one element (a Locator). */
export function artefacts(suite: string): (target: Page | Locator, name: string) => Promise<void> {
  const dir = join(process.cwd(), "test-artifacts", suite);
  mkdirSync(dir, { recursive: true });
  return async (target, name) => void (await target.screenshot({ path: join(dir, `${name}.png`) }));
}
