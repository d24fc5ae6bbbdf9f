/**
 * The three browser engines behind one small interface, so that a test or a benchmark is
 * written once and run in each: Chromium (Blink, V8) through playwright-core, Firefox
 * (Gecko, SpiderMonkey) through puppeteer-core over WebDriver BiDi, and WebKit (Safari's engine,
 * JavaScriptCore) through its W3C WebDriver (webkit.ts). All three are Debian's own builds.
 *
 * A page is driven by strings of JavaScript, evaluated in it (a promise they give is awaited):
 * what every driver can do. WebKit has one window: its pages are opened one at a time.
 * @module
 */
import type { Browser as PwBrowser, Page as PwPage } from 'playwright-core';
import type { Browser as PpBrowser, Page as PpPage } from 'puppeteer-core';
import { launchChromium, openPage } from './chromium.js';
import { launchFirefox } from './firefox.js';
import { WebKit } from './webkit.js';

/** The engines. */
export type EngineName = 'chromium' | 'firefox' | 'webkit';
export const ENGINES: readonly EngineName[] = ['chromium', 'firefox', 'webkit'];

/** A page of an engine. */
export interface EnginePage {
  /** Opens `url` and waits for it to load. */
  goto(url: string): Promise<void>;
  /** Evaluates the expression `expr` in the page (awaiting a promise it gives); its value, as JSON. */
  evaluate<T>(expr: string, timeoutMs?: number): Promise<T>;
  /** Console errors and uncaught exceptions so far (WebKit's driver reports none). */
  readonly errors: string[];
  close(): Promise<void>;
}

/** A running browser. */
export interface Engine {
  readonly name: EngineName;
  /** The browser's version. */
  readonly version: string;
  newPage(): Promise<EnginePage>;
  close(): Promise<void>;
}

/** Options of {@link launchEngine}. */
export interface EngineOptions {
  /** WebKit only: give pages SharedArrayBuffer, as Safari gives cross-origin-isolated pages (see webkit.ts). Default true. */
  sharedArrayBuffer?: boolean;
}

const wrap = (expr: string) => `(async () => (${expr}))()`;

function chromiumPage(page: PwPage, errors: string[]): EnginePage {
  return {
    goto: async (url) => void (await page.goto(url)),
    evaluate: <T>(expr: string) => page.evaluate(wrap(expr)) as Promise<T>,
    errors,
    close: () => page.close(),
  };
}

async function firefoxPage(browser: PpBrowser): Promise<EnginePage> {
  const page: PpPage = await browser.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`pageerror: ${(e as Error).message}`));
  return {
    goto: async (url) => void (await page.goto(url)),
    evaluate: <T>(expr: string) => page.evaluate(wrap(expr)) as Promise<T>,
    errors,
    close: () => page.close(),
  };
}

/** Starts `name` (see the module doc). */
export async function launchEngine(name: EngineName, o: EngineOptions = {}): Promise<Engine> {
  if (name === 'chromium') {
    const b: PwBrowser = await launchChromium();
    return {
      name, version: b.version(),
      newPage: async () => {
        const { page, errors } = await openPage(b);
        return chromiumPage(page, errors);
      },
      close: () => b.close(),
    };
  }
  if (name === 'firefox') {
    const b = await launchFirefox();
    return { name, version: (await b.version()).replace(/^firefox\//i, ''), newPage: () => firefoxPage(b), close: () => b.close() };
  }
  const wk = await WebKit.launch({ sharedArrayBuffer: o.sharedArrayBuffer !== false });
  let open = false;
  return {
    name, version: wk.version,
    newPage: async () => {
      if (open) throw new Error('WebKit: one page at a time (close the last one first)');
      open = true;
      return {
        goto: (url) => wk.goto(url),
        evaluate: <T>(expr: string, timeoutMs?: number) => wk.evaluate<T>(expr, timeoutMs),
        errors: [],
        close: async () => {
          open = false;
          await wk.goto('about:blank').catch(() => {});
        },
      };
    },
    close: () => wk.close(),
  };
}

/** Waits until `expr` is truthy in `page` (polled every 100 ms); fails after `timeoutMs`, with the page's errors. */
export async function waitFor(page: EnginePage, expr: string, timeoutMs = 60_000): Promise<void> {
  const t0 = Date.now();
  while (!(await page.evaluate<boolean>(`!!(${expr})`))) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`waited ${timeoutMs} ms for ${expr}\n${page.errors.join('\n')}`);
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

/**
 * Waits until the page sets `globalThis.__result` and returns it; a page that sets
 * `{ error }` fails with it (and the page's errors).
 */
export async function pageResultOf<T>(page: EnginePage, timeoutMs = 90_000): Promise<T> {
  await waitFor(page, 'globalThis.__result !== undefined', timeoutMs);
  const r = await page.evaluate<T & { error?: string }>('globalThis.__result');
  if (r && typeof r === 'object' && r.error) throw new Error(`page failed: ${r.error}\n${page.errors.join('\n')}`);
  return r;
}

/** Opens `url` in a new page of `engine`, returns its `__result`, closes the page. */
export async function runPage<T>(engine: Engine, url: string, timeoutMs = 90_000): Promise<T> {
  const page = await engine.newPage();
  try {
    await page.goto(url);
    return await pageResultOf<T>(page, timeoutMs);
  } finally {
    await page.close();
  }
}
