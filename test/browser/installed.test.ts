/**
 * The packed tarball, installed into a fresh folder outside the repository
 * (`npm install <tarball> --offline`: the package has no dependencies), must work
 *   1. from Node with no flags (`import { init, rmsNorm, createPool } from 'rmsnorm-wasm'`);
 *   2. in a Vite app built with `vite build` (the repository's Vite, run on the app folder):
 *      served with COOP/COEP the pool runs in `threads` mode, without them in `single` mode,
 *      with bit-identical results; and from `vite` (dev server) and `vite preview` with the
 *      headers set in vite.config.js as docs/web-app.md shows;
 *   3. from a plain `<script type="module">` page importing the installed files by path.
 * Every case runs fixtures/check.js: results vs a float64 reference computed in the page.
 */
import type { ChildProcess } from 'node:child_process';
import { copyFile, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { launchChromium, openPage, pageResult } from '../../demo/chromium.js';
import { expectChecksPass, type CheckSummary } from './expect-checks.js';
import { npm, packRepo, REPO, run, type Packed } from './pack.js';
import { CSP, serveStatic, type StaticServer } from '../../demo/static-server.js';
import { startVite, VITE_BIN } from './vite.js';

const FIXTURES = join(REPO, 'test', 'browser', 'fixtures');

let packed: Packed;
let app: string;
let browser: Browser;
const servers: StaticServer[] = [];
const children: ChildProcess[] = [];

/** Serves `root` (isolated: COOP/COEP + the documented CSP), loads `page`, returns its summary. */
async function check(root: string, page: string, isolated: boolean): Promise<CheckSummary> {
  const server = await serveStatic({
    root,
    isolated,
    headers: isolated ? { 'Content-Security-Policy': CSP } : {},
  });
  servers.push(server);
  const { page: p, errors } = await openPage(browser);
  try {
    await p.goto(server.url + page);
    return await pageResult<CheckSummary>(p, errors, 90_000);
  } finally {
    await p.close();
    await server.close();
  }
}

/** Loads `url` and returns the check summary. */
async function checkUrl(url: string): Promise<CheckSummary> {
  const { page: p, errors } = await openPage(browser);
  try {
    await p.goto(url);
    return await pageResult<CheckSummary>(p, errors, 90_000);
  } finally {
    await p.close();
  }
}

function expectThreads(r: CheckSummary): void {
  expect(r.crossOriginIsolated).toBe(true);
  // Chromium has relaxed SIMD: init()'s build, and the pool's threads twin
  expect(r.build).toBe('simd-relaxed');
  expect(r.mode).toBe('threads');
  expect(r.poolBuild).toBe('simd-relaxed-threads');
  expectChecksPass(r);
}

function expectSingle(r: CheckSummary): void {
  expect(r.crossOriginIsolated).toBe(false);
  expect(r.build).toBe('simd-relaxed');
  expect(r.mode).toBe('single');
  expect(r.poolBuild).toBe('simd-relaxed');
  expectChecksPass(r);
}

beforeAll(async () => {
  const launching = launchChromium();
  packed = await packRepo('rmsnorm-wasm-install-');
  app = join(packed.dir, 'app');
  await run('mkdir', [app]);
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  for (const f of await readdir(join(FIXTURES, 'app'))) await copyFile(join(FIXTURES, 'app', f), join(app, f));
  // check.js and the reference it imports, side by side (the app has no shared/ folder)
  const check = await readFile(join(FIXTURES, 'check.js'), 'utf8');
  await writeFile(join(app, 'check.js'), check.replace("'../../../shared/reference.js'", "'./reference.js'"));
  await copyFile(join(REPO, 'shared', 'reference.js'), join(app, 'reference.js'));
  await npm(['install', packed.tarball, '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], app);
  browser = await launching;
}, 120_000);

afterAll(async () => {
  for (const c of children) c.kill();
  await browser?.close();
  await Promise.all(servers.map((s) => s.close()));
  await packed?.cleanup();
});

describe('installed tarball', () => {
  test('installs outside the repository as a plain folder with no dependencies', async () => {
    expect(app.startsWith(REPO)).toBe(false);
    expect(await readdir(join(app, 'node_modules'))).toEqual(['.bin', '.package-lock.json', 'rmsnorm-wasm']);
    expect(await readdir(join(app, 'node_modules', '.bin'))).toEqual(['rmsnorm-wasm']);
  });

  test('the installed command runs (npx rmsnorm-wasm): --version, and a normalize of a .npy', async () => {
    const bin = join(app, 'node_modules', '.bin', 'rmsnorm-wasm');
    const version = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')).version as string;
    expect((await run(bin, ['--version'], { cwd: app })).stdout.trim()).toBe(version);
    await copyFile(join(REPO, 'test', 'fixtures', 'npy', 'v1.npy'), join(app, 'in.npy'));
    const { stdout } = await run(bin, ['normalize', 'in.npy', 'out.npy', '--json'], { cwd: app, timeout: 60_000 });
    expect(JSON.parse(stdout)).toMatchObject({ rows: 15, dim: 16, format: 'npy', dtype: 'float32' });
    expect((await readFile(join(app, 'out.npy'))).length).toBe((await readFile(join(app, 'in.npy'))).length);
  }, 90_000);

  test('works from Node with no flags', async () => {
    const { stdout } = await run(process.execPath, ['node-main.js'], { cwd: app, timeout: 60_000 });
    const r = JSON.parse(stdout) as CheckSummary;
    // Node 20 without its flag has no relaxed SIMD: init()'s build, and the pool's threads twin
    expect(r.build).toBe(Number(process.versions.node.split('.')[0]) >= 22 ? 'simd-relaxed' : 'simd');
    expect(r.mode).toBe('threads');
    expect(r.poolBuild).toBe(`${r.build}-threads`);
    expectChecksPass(r);
  }, 90_000);

  describe('in a Vite app (vite build)', () => {
    let dist: string;
    beforeAll(async () => {
      await run(process.execPath, [VITE_BIN, 'build'], { cwd: app, timeout: 120_000 });
      dist = join(app, 'dist');
    }, 150_000);

    test('emits the wasm builds docs/web-app.md names (bench/results/size.json: every build, its bytes) and the worker as separate assets', async () => {
      const assets = await readdir(join(dist, 'assets'));
      const sizes = JSON.parse(await readFile(join(REPO, 'bench/results/size.json'), 'utf8')) as { builds: Record<string, { wasm: { bytes: number } }> };
      const emitted = await Promise.all(assets.filter((f) => f.endsWith('.wasm')).map(async (f) => (await stat(join(dist, 'assets', f))).size));
      expect(emitted.sort()).toEqual(Object.values(sizes.builds).map((b) => b.wasm.bytes).sort());
      expect(assets.some((f) => /worker/i.test(f) && f.endsWith('.js'))).toBe(true);
    });

    const results: Promise<CheckSummary>[] = [];
    const serveBuilt = (isolated: boolean) => (results[+isolated] ??= check(dist, '', isolated));

    test('with COOP/COEP: threads mode, matches the f64 reference', async () => {
      expectThreads(await serveBuilt(true));
    }, 120_000);

    test('without them: single mode, matches the f64 reference', async () => {
      expectSingle(await serveBuilt(false));
    }, 120_000);

    test('both modes give bit-identical results', async () => {
      const [a, b] = await Promise.all([serveBuilt(true), serveBuilt(false)]);
      expect(a.hash).toBe(b.hash);
      expect(a.syncHash).toBe(b.syncHash);
    }, 120_000);

    test('`vite preview` with preview.headers: threads mode', async () => {
      expectThreads(await checkUrl(await startVite(app, ['preview'], children)));
    }, 120_000);
  });

  test('`vite` dev server with server.headers: threads mode', async () => {
    expectThreads(await checkUrl(await startVite(app, [], children)));
  }, 120_000);

  describe('from a plain <script type="module"> page, no bundler', () => {
    test('with COOP/COEP: threads mode, matches the f64 reference', async () => {
      expectThreads(await check(app, 'plain.html', true));
    }, 120_000);

    test('without them: single mode, matches the f64 reference', async () => {
      expectSingle(await check(app, 'plain.html', false));
    }, 120_000);
  });
});
