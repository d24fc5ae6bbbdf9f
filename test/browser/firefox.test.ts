/**
 * Issue 15, item 8: the package in Firefox (Debian's firefox-esr, driven by puppeteer-core over
 * WebDriver BiDi). On a cross-origin-isolated page (COOP/COEP and the strict CSP of
 * docs/web-app.md) fixtures/engines.html runs fixtures/check.js on the sync API with the `simd`
 * and the `simd-threads` builds and on the pool, which must run in threads mode; everything is
 * checked against the page's float64 reference and must be bit-identical to the same script
 * under Node (test/engines/run-checks.mjs).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectChecksPass, type CheckSummary } from './expect-checks.js';
import { firefoxResult, launchFirefox } from './firefox.js';
import { REPO } from './pack.js';
import { CSP, serveStatic, type StaticServer } from '../../demo/static-server.js';

interface EngineSummary {
  engine: string;
  simd: CheckSummary;
  simdThreads: CheckSummary;
}

let browser: Browser | undefined;
let server: StaticServer | undefined;
let firefox: EngineSummary;
let node: EngineSummary;

beforeAll(async () => {
  const nodeRun = promisify(execFile)(process.execPath, [join(REPO, 'test', 'engines', 'run-checks.mjs')], { cwd: REPO, timeout: 60_000 });
  [browser, server] = await Promise.all([launchFirefox(), serveStatic({ root: REPO, isolated: true, headers: { 'Content-Security-Policy': CSP } })]);
  firefox = await firefoxResult<EngineSummary>(browser, server.url + 'test/browser/fixtures/engines.html');
  node = JSON.parse((await nodeRun).stdout) as EngineSummary;
}, 120_000);

afterAll(async () => {
  await Promise.all([browser?.close(), server?.close()]);
});

describe('Firefox ESR', () => {
  test('is the Debian firefox-esr, on a cross-origin-isolated page', () => {
    expect(firefox.engine).toMatch(/ Firefox\/\d+/);
    expect(firefox.simd.crossOriginIsolated).toBe(true);
    expect(firefox.simd.sharedArrayBuffer).toBe(true);
  });

  test('sync API on simd and simd-threads, pool in threads mode: within tolerance of the f64 reference', () => {
    expect(firefox.simd.build).toBe('simd');
    expect(firefox.simd.mode).toBe('threads');
    expect(firefox.simd.threads).toBe(2);
    expectChecksPass(firefox.simd);
    expect(firefox.simdThreads.build).toBe('simd-threads');
    expectChecksPass(firefox.simdThreads, false);
  });

  test("bit-identical to Node's results (sync on both builds, pool)", () => {
    expect(firefox.simd.syncHash).toBe(node.simd.syncHash);
    expect(firefox.simdThreads.syncHash).toBe(node.simdThreads.syncHash);
    expect(firefox.simd.hash).toBe(node.simd.hash);
    expect(firefox.simd.hash).toBe(firefox.simd.syncHash);
  });
});
