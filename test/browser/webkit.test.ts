/**
 * The package in WebKit — Safari's engine (JavaScriptCore), as WebKitGTK's MiniBrowser runs it
 * under Xvfb (demo/webkit.ts) — once as Safari gives an isolated page shared memory
 * (`JSC_useSharedArrayBuffer=1`) and once without it, as the GTK port gives pages by default:
 *   - fixtures/engines.html on a cross-origin-isolated page (COOP/COEP and the strict CSP):
 *     every build WebKit validates (no relaxed SIMD, as in Safari), the sync API and the pool,
 *     float32 and half precision, within tolerance of the page's float64 reference and
 *     bit-identical to Node; every build it cannot run refused alike by loadRmsNorm and
 *     createPool, saying what is missing;
 *   - the pool page isolated and not: threads mode exactly where the page has shared memory,
 *     the same bits either way.
 * Safari itself, on macOS and iOS devices, is not run here.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { launchEngine, runPage, type Engine } from '../../demo/engines.js';
import { CSP, serveStatic, type StaticServer } from '../../demo/static-server.js';
import { webkitInstalled } from '../../demo/webkit.js';
import { expectChecksPass, expectEngineChecksPass, type CheckSummary, type EngineSummary } from './expect-checks.js';
import { REPO } from './pack.js';

const installed = webkitInstalled();
if (!installed) {
  console.warn('\n*** WebKit is NOT TESTED: MiniBrowser, WebKitWebDriver or Xvfb is missing (bash scripts/setup.sh installs them) ***\n');
}

let isolated: StaticServer;
let plain: StaticServer;
let node: EngineSummary;

beforeAll(async () => {
  const nodeRun = promisify(execFile)(process.execPath, [join(REPO, 'test', 'engines', 'run-checks.mjs')], { cwd: REPO, timeout: 60_000 });
  [isolated, plain] = await Promise.all([serveStatic({ root: REPO, isolated: true, headers: { 'Content-Security-Policy': CSP } }), serveStatic({ root: REPO })]);
  node = JSON.parse((await nodeRun).stdout) as EngineSummary;
}, 90_000);

afterAll(async () => {
  await Promise.all([isolated?.close(), plain?.close()]);
});

describe.skipIf(!installed).each([true, false])('WebKit, SharedArrayBuffer given to pages: %s', (shared) => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await launchEngine('webkit', { sharedArrayBuffer: shared });
  }, 60_000);
  afterAll(async () => {
    await engine?.close();
  });

  test('is WebKit (Safari\'s user agent) with no relaxed SIMD; every build it runs, sync API and pool, bit-identical to Node; the others refused saying why', async () => {
    const r = await runPage<EngineSummary>(engine, isolated.url + 'test/browser/fixtures/engines.html', 120_000);
    expect(r.engine).toMatch(/AppleWebKit\/[\d.]+ .*Safari\/[\d.]+/);
    expect(r.relaxed).toBe(false);
    expect(r.shared).toBe(shared);
    expectEngineChecksPass(r, node);
    if (!shared) expect(r.refused['simd-threads']).toMatch(/SharedArrayBuffer: this engine does not give it to this page, although the page is cross-origin isolated/);
  }, 180_000);

  test('the pool page: threads mode on an isolated page with shared memory, single mode otherwise; the same bits', async () => {
    const a = await runPage<CheckSummary>(engine, isolated.url + 'test/browser/fixtures/pool.html');
    const b = await runPage<CheckSummary>(engine, plain.url + 'test/browser/fixtures/pool.html');
    expect(a.crossOriginIsolated).toBe(true);
    expect(b.crossOriginIsolated).toBe(false);
    expect(a.mode).toBe(shared ? 'threads' : 'single');
    expect(b.mode).toBe('single');
    expect(a.build).toBe('simd');
    expect(a.poolBuild).toBe(shared ? 'simd-threads' : 'simd');
    expectChecksPass(a);
    expectChecksPass(b);
    expect(a.hash).toBe(b.hash);
    expect(a.syncHash).toBe(b.syncHash);
    expect(a.syncHash).toBe(node.runs.simd!.syncHash);
  }, 180_000);
});
