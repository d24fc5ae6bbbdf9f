/**
 * The demo page (demo/), served as `npm run demo` serves it: in a cross-origin-isolated
 * page it must say so, load simd-relaxed (Chromium has relaxed SIMD) and run the pool in
 * threads mode; a run from the UI must check and time every contender and draw them. Without
 * COOP/COEP: simd-relaxed build, single mode, and the scripted interface (`rmsnormDemo.run`, what `npm run bench:browser` uses)
 * still passes every check.
 *
 * The screenshot goes to test-results/demo.png; with UPDATE_SCREENSHOTS=1 (`npm run
 * demo:screenshot`) it is taken after a normal-length run and also written to docs/demo.png.
 */
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startDemoServer } from '../../demo/server.js';
import { launchChromium, openPage } from '../../demo/chromium.js';
import { REPO } from './pack.js';
import type { StaticServer } from '../../demo/static-server.js';

const UPDATE = process.env.UPDATE_SCREENSHOTS === '1';
let browser: Browser;
let isolated: StaticServer;
let plain: StaticServer;

/** Opens the demo and waits until it has loaded the library (or failed to). */
async function openDemo(server: StaticServer): Promise<{ page: Page; errors: string[] }> {
  const { page, errors } = await openPage(browser);
  await page.setViewportSize({ width: 1100, height: 900 });
  await page.goto(`${server.url}demo/`);
  await page.waitForFunction(() => ['ready', 'error'].includes(document.body.dataset.state ?? ''), null, {
    timeout: 60_000,
    polling: 100,
  });
  expect(await page.evaluate(() => document.body.dataset.state), `${await page.textContent('#status')}\n${errors.join('\n')}`).toBe('ready');
  return { page, errors };
}

beforeAll(async () => {
  [browser, isolated, plain] = await Promise.all([
    launchChromium(),
    startDemoServer({ isolated: true }),
    startDemoServer({ isolated: false }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([browser?.close(), isolated?.close(), plain?.close()]);
});

describe('demo page', () => {
  test('`/` redirects to the demo', async () => {
    const res = await fetch(isolated.url, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/demo/');
    expect(res.headers.get('cross-origin-opener-policy')).toBe('same-origin');
  });

  test('cross-origin isolated: shows simd-relaxed and threads mode; a run checks, times and charts every contender', async () => {
    const { page, errors } = await openDemo(isolated);
    expect(await page.textContent('#env-isolated')).toMatch(/^yes/);
    // init() picks simd-relaxed (Chromium has relaxed SIMD) even where threads run (load.ts,
    // defaultBuild); the pool has simd-relaxed-threads
    expect(await page.textContent('#env-build')).toBe('simd-relaxed');
    expect(await page.textContent('#env-pool')).toMatch(/^threads × \d+$/);

    await page.selectOption('#preset', '64x4096');
    await page.selectOption('#budget', UPDATE ? '500' : '150');
    await page.click('#run');
    await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state ?? ''), null, {
      timeout: 90_000,
      polling: 100,
    });
    const status = await page.textContent('#status');
    expect(await page.evaluate(() => document.body.dataset.state), `${status}\n${errors.join('\n')}`).toBe('done');
    expect(status).toMatch(/^done: all \d+ results passed/);
    expect(await page.textContent('#res-shape')).toContain('64 × 4096');

    // 8 contenders × forward and backward, each passed and timed, each one bar.
    const cells = await page.$$eval('#table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent ?? '')));
    expect(cells).toHaveLength(16);
    const names = new Set(cells.map((c) => c[1]));
    for (const n of ['js-naive', 'wasm-default', 'wasm-layer', 'wasm-scalar', 'wasm-simd', 'wasm-simd-zero-copy']) expect(names).toContain(n);
    expect([...names].filter((n) => /^pool-\d+(-zero-copy)?$/.test(n!))).toHaveLength(2);
    for (const c of cells) {
      expect(c[5]).toBe('✓ passed');
      expect(c[2]).toMatch(/^[\d.]+ (µs|ms)$/);
      expect(c[3]).toMatch(/^[\d.]+$/);
    }
    expect(await page.$$eval('#chart rect', (r) => r.length)).toBe(16);
    expect(errors).toEqual([]);

    await mkdir(join(REPO, 'test-results'), { recursive: true });
    const shot = join(REPO, 'test-results', 'demo.png');
    await page.screenshot({ path: shot, fullPage: true });
    const png = await readFile(shot);
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    if (UPDATE) await copyFile(shot, join(REPO, 'docs', 'demo.png'));
    await page.close();
  }, 120_000);

  test('not isolated: shows simd-relaxed and single mode; the scripted run passes every check', async () => {
    const { page, errors } = await openDemo(plain);
    expect(await page.textContent('#env-isolated')).toMatch(/^no/);
    expect(await page.textContent('#env-build')).toBe('simd-relaxed');
    expect(await page.textContent('#env-pool')).toMatch(/^single/);
    // A string, not a function: vitest's transform would add helpers the page lacks.
    const rows = (await page.evaluate(
      `rmsnormDemo.run({ shapes: ['3x100', '33x257'], ops: ['copy', 'forward', 'backward', 'layernorm'], budgetMs: 5 })`,
    )) as { shape: string; op: string; contender: string; check: { passed: boolean }; medianMs: number | null; vsNaive: number | null }[];
    expect(rows).toHaveLength(2 * 18);
    for (const r of rows) {
      expect(r.check.passed, `${r.shape} ${r.op} ${r.contender}`).toBe(true);
      expect(r.medianMs, `${r.shape} ${r.op} ${r.contender}`).toBeGreaterThan(0);
    }
    expect(rows.filter((r) => r.contender === 'pool-1')).toHaveLength(4);
    expect(rows.find((r) => r.op === 'forward' && r.contender === 'js-naive')?.vsNaive).toBe(1);
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);
});
