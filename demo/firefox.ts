/**
 * Launching Debian's Firefox ESR (/usr/bin/firefox-esr) through puppeteer-core over WebDriver
 * BiDi: Playwright drives only its own patched Firefox build, which cannot be downloaded here,
 * while BiDi drives the stock browser.
 * @module
 */
import puppeteer, { type Browser, type Page } from 'puppeteer-core';

/** Where Debian's firefox-esr package puts the browser; override with FIREFOX_PATH. */
export const FIREFOX_PATH = process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr';

/**
 * Starts a headless Firefox with a fresh temporary profile (puppeteer makes and removes it).
 * Calls into the page may run for many minutes (a benchmark's whole loop is one evaluate), longer
 * than puppeteer's 3-minute protocol timeout; callers put their own timeouts where they need them.
 */
export function launchFirefox(): Promise<Browser> {
  return puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX_PATH, headless: true, protocol: 'webDriverBiDi', protocolTimeout: 60 * 60_000 });
}

/**
 * Opens `url` and waits until the page sets `globalThis.__result` (see fixtures/check.js), then
 * returns it; console errors and uncaught exceptions are recorded so a failure says what broke.
 */
export async function firefoxResult<T>(browser: Browser, url: string, timeoutMs = 90_000): Promise<T> {
  const page: Page = await browser.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${(e as Error).message}`));
  try {
    await page.goto(url);
    try {
      await page.waitForFunction(() => (globalThis as { __result?: unknown }).__result !== undefined, { timeout: timeoutMs, polling: 100 });
    } catch (err) {
      throw new Error(`page produced no result: ${String(err)}\n${errors.join('\n')}`);
    }
    const r = (await page.evaluate(() => (globalThis as { __result?: unknown }).__result)) as T & { error?: string };
    if (r.error) throw new Error(`page failed: ${r.error}\n${errors.join('\n')}`);
    return r;
  } finally {
    await page.close();
  }
}
