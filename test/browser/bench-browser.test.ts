/**
 * `npm run bench:browser` (demo/bench-browser.ts) in its quick mode, into a temporary folder:
 * in each engine (Chromium, Firefox, WebKit) it must drive the demo page and write
 * browser-ENGINE.json in the format of `npm run bench` (bench/run.ts's top-level keys,
 * bench/types.ts rows), every row checked against the float64 reference and timed, plus its
 * chart; half-browser-ENGINE.json, half precision against float32 on each SIMD build the engine
 * runs (and the relaxed build against the plain one where it has relaxed SIMD), every pair
 * timed; one-off-browser.json, the default call's breakdown in every engine; and the page's
 * time to its first result, this package and onnxruntime-web, each load checked. No timing is
 * asserted.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { webkitInstalled } from '../../demo/webkit.js';
import { REPO, run } from './pack.js';

let out: string | undefined;

afterAll(async () => {
  if (out) await rm(out, { recursive: true, force: true });
});

test('quick run in every engine writes bench-format JSON with every row checked and timed', async () => {
  out = await mkdtemp(join(tmpdir(), 'rmsnorm-bench-browser-'));
  const tsx = join(REPO, 'node_modules', 'tsx', 'dist', 'cli.mjs');
  await run(process.execPath, [tsx, 'demo/bench-browser.ts', '--quick', '--out', out], { cwd: REPO, timeout: 240_000 });
  const engines = ['chromium', 'firefox', ...(webkitInstalled() ? ['webkit'] : [])];
  for (const engine of engines) {
    const json = JSON.parse(await readFile(join(out, `browser-${engine}.json`), 'utf8'));
    for (const k of ['machine', 'node', 'v8', 'date', 'quick', 'shapes', 'durationS', 'tolerance', 'bytesPerElem', 'timing', 'notes', 'comparisons', 'layerNormSavings', 'summary', 'coldStart', 'rows']) {
      expect(json, `${engine}: ${k}`).toHaveProperty(k);
    }
    // the page checks its first result before it reports a time (demo/cold-start/main.js)
    expect(json.coldStart.rows.map((r: { name: string }) => r.name), engine).toEqual(['rmsnorm-wasm', 'onnxruntime-web']);
    for (const r of json.coldStart.rows) expect(r.ms, `${engine}: ${r.name}`).toBeGreaterThan(0);
    expect(json.quick).toBe(true);
    expect(json.browser.name).toBe(engine);
    expect(json.browser.crossOriginIsolated).toBe(true);
    expect(json.browser.poolMode, engine).toBe('threads');
    const rows = json.rows as Record<string, unknown>[];
    // Per shape: copy, 8 forward, 8 backward, layernorm — and onnxruntime-web with 1 and 2
    // threads, each run in a page of its own.
    expect(rows, engine).toHaveLength(json.shapes.length * 20);
    for (const s of json.shapes) {
      expect(rows.filter((r) => r.shape === s && r.family === 'ort-web').map((r) => r.contender).sort(), `${engine} ${s}`).toEqual(['ort-web-1t', 'ort-web-2t']);
    }
    for (const r of rows) {
      const label = `${engine} ${r.shape} ${r.op} ${r.contender}`;
      expect((r.check as { passed: boolean }).passed, label).toBe(true);
      expect(r.error, label).toBeNull();
      expect(r.medianMs, label).toBeGreaterThan(0);
      expect(r.gbPerS, label).toBeGreaterThan(0);
      for (const k of ['family', 'threads', 'zeroCopy', 'note', 'bytesPerElem', 'meanMs', 'rmePct', 'samples', 'gelemPerS', 'vsNaive', 'pctOfCopy']) {
        expect(r, `${label}: ${k}`).toHaveProperty(k);
      }
    }
    const svg = await readFile(join(out, `browser-${engine}.svg`), 'utf8');
    expect(svg).toMatch(/^<svg[\s\S]*<\/svg>\s*$/);
    const half = JSON.parse(await readFile(join(out, `half-browser-${engine}.json`), 'utf8'));
    const relaxed = engine !== 'webkit';
    expect(half.builds, engine).toEqual(relaxed ? ['simd', 'simd-relaxed'] : ['simd']);
    const pairs = half.rows as { shape: string; pair: string; ratio: number; baselineUs: number; halfUs: number }[];
    const want = ['bfloat16', 'float16'].flatMap((dt) =>
      ['forward', 'backward'].flatMap((op) => [
        `${dt} ${op} zero-copy vs float32, simd`,
        ...(relaxed ? [`${dt} ${op} zero-copy vs float32, simd-relaxed`, `${dt} ${op} zero-copy, simd-relaxed vs simd`] : []),
      ]),
    );
    expect(pairs.map((r) => r.pair), engine).toEqual(want);
    for (const r of pairs) {
      expect(r.ratio, r.pair).toBeGreaterThan(0);
      expect(r.baselineUs, r.pair).toBeGreaterThan(0);
      expect(r.halfUs, r.pair).toBeGreaterThan(0);
    }
  }
  const oneOff = JSON.parse(await readFile(join(out, 'one-off-browser.json'), 'utf8'));
  expect(Object.keys(oneOff.engines)).toEqual(engines);
  for (const e of engines) {
    for (const r of oneOff.engines[e].rows) {
      for (const k of ['plainJs', 'default', 'out', 'layer', 'zeroCopy', 'newArray', 'newWrite', 'copy']) expect(r.us[k], `${e} ${r.shape} ${k}`).toBeGreaterThan(0);
    }
  }
}, 300_000);
