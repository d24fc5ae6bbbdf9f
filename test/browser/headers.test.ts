/**
 * What docs/web-app.md says about headers, checked in Chromium. Content-Security-Policy, on a
 * cross-origin-isolated page: the recommended policy works; without 'wasm-unsafe-eval' init()
 * rejects with a CompileError naming the CSP; with workers forbidden createPool() rejects.
 * COOP/COEP: on the HTML alone they isolate the page, but the worker script is then blocked,
 * so createPool() rejects: the headers must be on the worker script too.
 */
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { launchChromium, openPage, pageResult } from '../../demo/chromium.js';
import { CSP, ISOLATION_HEADERS, serveStatic, type ServeOptions } from '../../demo/static-server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let browser: Browser;

interface CspResult {
  crossOriginIsolated: boolean;
  init: string;
  pool: string;
}

/** Loads the CSP page under `policy` (plus COOP/COEP) and returns what it saw. */
function underPolicy(policy: string): Promise<CspResult> {
  return load({ root: ROOT, isolated: true, headers: { 'Content-Security-Policy': policy } });
}

/** Loads the CSP page from a server made with `options` and returns what it saw. */
async function load(options: ServeOptions): Promise<CspResult> {
  const server = await serveStatic(options);
  const { page, errors } = await openPage(browser);
  try {
    await page.goto(`${server.url}test/browser/fixtures/csp.html`);
    return await pageResult<CspResult>(page, errors, 30_000);
  } finally {
    await page.close();
    await server.close();
  }
}

beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

describe('Content-Security-Policy', () => {
  test(`the documented policy (${CSP}) runs init() and the pool's threads`, async () => {
    const r = await underPolicy(CSP);
    expect(r.crossOriginIsolated).toBe(true);
    expect(r.init).toBe('ok simd-relaxed'); // Chromium has relaxed SIMD; the pool runs simd-relaxed-threads
    // [3, 4]: rms = sqrt(12.5), y = [0.8485, 1.1314].
    expect(r.pool).toBe('ok threads 0.8485,1.1314');
  }, 60_000);

  test("without 'wasm-unsafe-eval', init() rejects with a CompileError naming the policy", async () => {
    const r = await underPolicy("default-src 'self'; script-src 'self'");
    expect(r.init).toMatch(/^CompileError: .*Content Security [Pp]olicy/);
  }, 60_000);

  test("with worker-src 'none', createPool() rejects (workers cannot start)", async () => {
    const r = await underPolicy(`${CSP.replace("worker-src 'self'", "worker-src 'none'")}`);
    expect(r.init).toBe('ok simd-relaxed'); // Chromium has relaxed SIMD; the pool runs simd-relaxed-threads
    expect(r.pool).toMatch(/^Error: rmsnorm-wasm pool: worker \d+ died while starting/);
  }, 60_000);
});

describe('COOP/COEP', () => {
  test('only on the HTML: the page is isolated, but the worker script is blocked and createPool() rejects', async () => {
    const r = await load({ root: ROOT, headersFor: (file) => (file.endsWith('.html') ? ISOLATION_HEADERS : undefined) });
    expect(r.crossOriginIsolated).toBe(true);
    expect(r.init).toBe('ok simd-relaxed'); // Chromium has relaxed SIMD; the pool runs simd-relaxed-threads
    expect(r.pool).toMatch(/^Error: rmsnorm-wasm pool: worker \d+ died while starting/);
  }, 60_000);
});
