/**
 * A real headless Chromium for the browser tests: Debian's `chromium` package
 * (scripts/check-system.mjs installs it when missing), driven by playwright-core over CDP. No
 * browser is ever downloaded.
 */
import { existsSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";
import { expect } from "vitest";

/** The browser executable: Debian's, or `PIXPORT_CHROMIUM`. */
export const CHROMIUM = process.env.PIXPORT_CHROMIUM ?? "/usr/bin/chromium";

/**
 * Launches headless Chromium. A missing browser throws rather than skips: CI installs it, and a
 * test that quietly skipped would check nothing.
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (or set PIXPORT_CHROMIUM)`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Root in CI needs --no-sandbox; the rest keeps Chromium from calling Google's services,
    // which the tests' loopback-only network refuses (and the request log below would catch).
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/** Records every URL a page requests. */
export function recordRequests(page: Page): string[] {
  const urls: string[] = [];
  page.on("request", (request) => urls.push(request.url()));
  return urls;
}

/** Every recorded request went to 127.0.0.1 (or was a `blob:`/`data:` URL), and there was one. */
export function expectLoopbackOnly(urls: string[]): void {
  expect(urls.length).toBeGreaterThan(0);
  const outside = urls.filter((url) => {
    if (url.startsWith("blob:") || url.startsWith("data:")) return false;
    return new URL(url).hostname !== "127.0.0.1";
  });
  expect(outside).toEqual([]);
}
