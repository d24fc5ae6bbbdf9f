/**
 * `npm run bench:browser` (demo/bench-browser.ts) in its quick mode, into a temporary folder:
 * it must drive the demo page headless and write browser.json in the format of `npm run bench`
 * (bench/run.ts's top-level keys, bench/types.ts rows), every row checked against the float64
 * reference and timed, plus browser.svg; and half-browser.json, half precision against float32
 * on both SIMD builds (Chromium has relaxed SIMD) and the relaxed build against the plain one,
 * every pair timed. No timing is asserted.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { REPO, run } from './pack.js';

let out: string | undefined;

afterAll(async () => {
  if (out) await rm(out, { recursive: true, force: true });
});

test('quick headless run writes bench-format JSON with every row checked and timed', async () => {
  out = await mkdtemp(join(tmpdir(), 'rmsnorm-bench-browser-'));
  const tsx = join(REPO, 'node_modules', 'tsx', 'dist', 'cli.mjs');
  await run(process.execPath, [tsx, 'demo/bench-browser.ts', '--quick', '--out', out], { cwd: REPO, timeout: 120_000 });
  const json = JSON.parse(await readFile(join(out, 'browser.json'), 'utf8'));
  for (const k of ['machine', 'node', 'v8', 'date', 'quick', 'shapes', 'durationS', 'tolerance', 'bytesPerElem', 'timing', 'notes', 'comparisons', 'layerNormSavings', 'summary', 'rows']) {
    expect(json, k).toHaveProperty(k);
  }
  expect(json.quick).toBe(true);
  expect(json.browser.crossOriginIsolated).toBe(true);
  expect(json.browser.poolMode).toBe('threads');
  const rows = json.rows as Record<string, unknown>[];
  // Per shape: copy, 8 forward, 8 backward, layernorm — and onnxruntime-web with 1 and 2
  // threads, each run in a page of its own.
  expect(rows).toHaveLength(json.shapes.length * 20);
  for (const s of json.shapes) {
    expect(rows.filter((r) => r.shape === s && r.family === 'ort-web').map((r) => r.contender).sort(), s).toEqual(['ort-web-1t', 'ort-web-2t']);
  }
  for (const r of rows) {
    const label = `${r.shape} ${r.op} ${r.contender}`;
    expect((r.check as { passed: boolean }).passed, label).toBe(true);
    expect(r.error, label).toBeNull();
    expect(r.medianMs, label).toBeGreaterThan(0);
    expect(r.gbPerS, label).toBeGreaterThan(0);
    for (const k of ['family', 'threads', 'zeroCopy', 'note', 'bytesPerElem', 'meanMs', 'rmePct', 'samples', 'gelemPerS', 'vsNaive', 'pctOfCopy']) {
      expect(r, `${label}: ${k}`).toHaveProperty(k);
    }
  }
  const svg = await readFile(join(out, 'browser.svg'), 'utf8');
  expect(svg).toMatch(/^<svg[\s\S]*<\/svg>\s*$/);
  const half = JSON.parse(await readFile(join(out, 'half-browser.json'), 'utf8'));
  expect(half.builds).toEqual(['simd', 'simd-relaxed']);
  const pairs = (half.rows as { shape: string; pair: string; ratio: number; baselineUs: number; halfUs: number }[]);
  const want = ['bfloat16', 'float16'].flatMap((dt) =>
    ['forward', 'backward'].flatMap((op) => [`${dt} ${op} zero-copy vs float32, simd`, `${dt} ${op} zero-copy vs float32, simd-relaxed`, `${dt} ${op} zero-copy, simd-relaxed vs simd`]),
  );
  expect(pairs.map((r) => r.pair)).toEqual(want);
  for (const r of pairs) {
    expect(r.ratio, r.pair).toBeGreaterThan(0);
    expect(r.baselineUs, r.pair).toBeGreaterThan(0);
    expect(r.halfUs, r.pair).toBeGreaterThan(0);
  }
}, 150_000);
