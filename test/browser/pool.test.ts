/**
 * The Worker pool in Chromium, which has relaxed SIMD. A cross-origin-isolated page (COOP/COEP,
 * plus the strict CSP docs/web-app.md recommends) must run the pool in `threads` mode on the
 * `simd-relaxed-threads` build; the same page without those headers must fall back to `single`
 * mode on `simd-relaxed`. Both are checked against a float64 reference computed in the page,
 * and must give bit-identical results. On the isolated page fixtures/engines.html then runs
 * every build, float32 and half precision, which must match Node bit for bit.
 */
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { launchChromium, openPage, pageResult } from '../../demo/chromium.js';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expectChecksPass, expectEngineChecksPass, type CheckSummary, type EngineSummary } from './expect-checks.js';
import { CSP, serveStatic, type StaticServer } from '../../demo/static-server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PAGE = 'test/browser/fixtures/pool.html';

let browser: Browser | undefined;
let isolated: StaticServer | undefined;
let plain: StaticServer | undefined;
const results = new Map<string, Promise<unknown>>();

/** Opens `page` on `server` once and returns its summary (memoized per server and page). */
function run<T = CheckSummary>(server: StaticServer, path = PAGE): Promise<T> {
  let p = results.get(server.url + path);
  if (!p) {
    p = (async () => {
      const { page, errors } = await openPage(browser!);
      try {
        await page.goto(server.url + path);
        return await pageResult<T>(page, errors, 90_000);
      } finally {
        await page.close();
      }
    })();
    results.set(server.url + path, p);
  }
  return p as Promise<T>;
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
  test('cross-origin isolated page: threads mode (simd-relaxed-threads under the pool, simd-relaxed for init), matches the f64 reference', async () => {
    const r = await run(isolated!);
    expect(r.crossOriginIsolated).toBe(true);
    expect(r.sharedArrayBuffer).toBe(true);
    expect(r.build).toBe('simd-relaxed'); // init()'s build; the pool's mode (threads) is checked next
    expect(r.mode).toBe('threads');
    expect(r.poolBuild).toBe('simd-relaxed-threads');
    expect(r.threads).toBeGreaterThanOrEqual(1);
    expectChecksPass(r);
  }, 120_000);

  test('page without COOP/COEP: single mode, simd-relaxed build, matches the f64 reference', async () => {
    const r = await run(plain!);
    expect(r.crossOriginIsolated).toBe(false);
    expect(r.sharedArrayBuffer).toBe(false);
    expect(r.build).toBe('simd-relaxed');
    expect(r.mode).toBe('single');
    expect(r.poolBuild).toBe('simd-relaxed');
    expectChecksPass(r);
  }, 120_000);

  test('both modes give bit-identical results', async () => {
    const [a, b] = await Promise.all([run(isolated!), run(plain!)]);
    expect(a.hash).toBe(b.hash);
    expect(a.syncHash).toBe(b.syncHash);
    expect(a.hash).toBe(a.syncHash);
  }, 120_000);

  test("every build, float32 and half precision, sync API and pool: within tolerance, bit-identical to Node's results", async () => {
    const node = promisify(execFile)(process.execPath, [join(ROOT, 'test', 'engines', 'run-checks.mjs')], { cwd: ROOT, timeout: 60_000 });
    const r = await run<EngineSummary>(isolated!, 'test/browser/fixtures/engines.html');
    expect(r.engine).toMatch(/Chrome\/\d+/);
    expect(r.relaxed).toBe(true);
    expectEngineChecksPass(r, JSON.parse((await node).stdout) as EngineSummary);
  }, 120_000);
});
