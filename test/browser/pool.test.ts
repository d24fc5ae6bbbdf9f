/**
 * Issue 3, browser side: the Worker pool in Chromium. A cross-origin-isolated page (COOP/COEP,
 * plus the strict CSP docs/web-app.md recommends) must run the pool in `threads` mode on the
 * `simd-threads` build; the same page without those headers must fall back to `single` mode
 * on `simd`. Both are checked against a float64 reference computed in the page, and must give
 * bit-identical results.
 */
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { launchChromium, openPage, pageResult } from '../../demo/chromium.js';
import { expectChecksPass, type CheckSummary } from './expect-checks.js';
import { CSP, serveStatic, type StaticServer } from '../../demo/static-server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PAGE = 'test/browser/fixtures/pool.html';

let browser: Browser | undefined;
let isolated: StaticServer | undefined;
let plain: StaticServer | undefined;
const results = new Map<string, Promise<CheckSummary>>();

/** Opens the check page on `server` once and returns its summary (memoized per server). */
function run(server: StaticServer): Promise<CheckSummary> {
  let p = results.get(server.url);
  if (!p) {
    p = (async () => {
      const { page, errors } = await openPage(browser!);
      try {
        await page.goto(server.url + PAGE);
        return await pageResult<CheckSummary>(page, errors, 90_000);
      } finally {
        await page.close();
      }
    })();
    results.set(server.url, p);
  }
  return p;
}

beforeAll(async () => {
  [browser, isolated, plain] = await Promise.all([
    launchChromium(),
    serveStatic({ root: ROOT, isolated: true, headers: { 'Content-Security-Policy': CSP } }),
    serveStatic({ root: ROOT }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([browser?.close(), isolated?.close(), plain?.close()]);
});

describe('worker pool in Chromium', () => {
  test('cross-origin isolated page: threads mode (simd-threads under the pool, simd for init), matches the f64 reference', async () => {
    const r = await run(isolated!);
    expect(r.crossOriginIsolated).toBe(true);
    expect(r.sharedArrayBuffer).toBe(true);
    expect(r.build).toBe('simd'); // init()'s build; the pool's mode (threads) is checked next
    expect(r.mode).toBe('threads');
    expect(r.threads).toBeGreaterThanOrEqual(1);
    expectChecksPass(r);
  }, 120_000);

  test('page without COOP/COEP: single mode, simd build, matches the f64 reference', async () => {
    const r = await run(plain!);
    expect(r.crossOriginIsolated).toBe(false);
    expect(r.sharedArrayBuffer).toBe(false);
    expect(r.build).toBe('simd');
    expect(r.mode).toBe('single');
    expectChecksPass(r);
  }, 120_000);

  test('both modes give bit-identical results', async () => {
    const [a, b] = await Promise.all([run(isolated!), run(plain!)]);
    expect(a.hash).toBe(b.hash);
    expect(a.syncHash).toBe(b.syncHash);
    expect(a.hash).toBe(a.syncHash);
  }, 120_000);
});
