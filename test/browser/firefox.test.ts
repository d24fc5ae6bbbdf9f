/**
 * The package in Firefox (Debian's firefox-esr, driven by puppeteer-core over
 * WebDriver BiDi). On a cross-origin-isolated page (COOP/COEP and the strict CSP of
 * docs/web-app.md) fixtures/engines.html runs fixtures/engine-checks.js: the sync API on every
 * build (Firefox has relaxed SIMD) and the pool, which must run in threads mode; everything is
 * checked against the page's float64 reference and must be bit-identical to the same script
 * under Node (test/engines/run-checks.mjs).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectEngineChecksPass, type EngineSummary } from './expect-checks.js';
import { firefoxResult, launchFirefox } from '../../demo/firefox.js';
import { REPO } from './pack.js';
import { CSP, serveStatic, type StaticServer } from '../../demo/static-server.js';

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
  test('is the Debian firefox-esr, on a cross-origin-isolated page, with relaxed SIMD', () => {
    expect(firefox.engine).toMatch(/ Firefox\/\d+/);
    expect(firefox.runs.simd!.crossOriginIsolated).toBe(true);
    expect(firefox.runs.simd!.sharedArrayBuffer).toBe(true);
    expect(firefox.relaxed).toBe(true);
  });

  test("every build, sync API and pool (threads mode): within tolerance of the f64 reference, bit-identical to Node's results", () => {
    expectEngineChecksPass(firefox, node);
  });
});
