/**
 * Launching Debian's Chromium (/usr/bin/chromium) through playwright-core: there is no
 * `playwright install` here, so the browser is always the system one.
 * @module
 */
import { chromium, type Browser, type ConsoleMessage, type Page } from 'playwright-core';

/** Where Debian's chromium package puts the browser; override with CHROMIUM_PATH. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Flags for a quiet, sandbox-free headless run: no sandbox (containers have no user
 * namespaces), no GPU, and nothing that reaches the network in the background.
 */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** Starts a browser with a fresh temporary profile (playwright's launch() makes one). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS] });
}

/**
 * Opens a page that records console errors and uncaught exceptions, so a failing test can
 * say what went wrong inside the page instead of only timing out.
 */
export async function openPage(browser: Browser): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('console', (m: ConsoleMessage) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('requestfailed', (r) => errors.push(`requestfailed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
  return { page, errors };
}

/**
 * Waits until the page sets `window.__result` (an object, or `{ error }` when it failed) and
 * returns it. Pages publish results this way so that the test never races the page's own awaits.
 */
export async function pageResult<T>(page: Page, errors: string[], timeoutMs = 60_000): Promise<T> {
  try {
    await page.waitForFunction(() => (globalThis as { __result?: unknown }).__result !== undefined, null, {
      timeout: timeoutMs,
      polling: 100,
    });
  } catch (err) {
    throw new Error(`page produced no result: ${String(err)}\n${errors.join('\n')}`);
  }
  const result = (await page.evaluate(() => (globalThis as { __result?: unknown }).__result)) as T & {
    error?: string;
  };
  if (result && typeof result === 'object' && 'error' in result && result.error) {
    throw new Error(`page failed: ${result.error}\n${errors.join('\n')}`);
  }
  return result;
}
