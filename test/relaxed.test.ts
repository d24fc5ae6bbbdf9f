/**
 * The relaxed-SIMD builds: what init() and createPool() pick with and without relaxed SIMD,
 * forcing a build, what an engine without relaxed SIMD says when one is forced, and the facts
 * the worker and the download rely on. (Their results are compared bit for bit with the other
 * builds by the numerics, half-precision and engines tests, which run every build.)
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { createPool, loadRmsNorm, relaxedSimdSupported } from '../dist/index.js';
import { rng, uniform } from '../shared/reference.js';
import { rejection } from './thrown.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const wasmFile = (build: string, file: string) => readFileSync(join(ROOT, 'wasm', build, file));

describe('the relaxed builds beside the plain ones', () => {
  it.each([
    ['simd', 'simd-relaxed'],
    ['simd-threads', 'simd-relaxed-threads'],
  ])('%s and %s have the same glue (the pool worker imports one for both threads builds)', (a, b) => {
    for (const f of ['rmsnorm_wasm.js', 'rmsnorm_wasm.d.ts']) expect(wasmFile(b, f).equals(wasmFile(a, f)), f).toBe(true);
  });

  it.each([
    ['simd', 'simd-relaxed'],
    ['simd-threads', 'simd-relaxed-threads'],
  ])('%s and %s: the relaxed one is at most 10% larger, gzipped', (a, b) => {
    const gz = (build: string) => gzipSync(wasmFile(build, 'rmsnorm_wasm_bg.wasm'), { level: 9 }).length;
    expect(gz(b)).toBeLessThanOrEqual(1.1 * gz(a));
  });
});

describe('with relaxed SIMD (this test process has it)', () => {
  it('createPool() runs simd-relaxed-threads; createPool({ build }) forces either, same bits', async () => {
    expect(relaxedSimdSupported()).toBe(true);
    const next = rng(5);
    const dim = 3001;
    const x = uniform(next, 64 * dim, -2, 2);
    const w = uniform(next, dim, 0.5, 1.5);
    const sync = await loadRmsNorm('simd');
    const bits = sync.float32ToHalf(x, 'float16');
    const want = sync.rmsNorm(bits, w, { dtype: 'float16' });
    for (const build of [undefined, 'simd-threads', 'simd-relaxed-threads'] as const) {
      const pool = await createPool({ threads: 2, ...(build ? { build } : {}) });
      try {
        expect(pool.mode).toBe('threads');
        expect(pool.build).toBe(build ?? 'simd-relaxed-threads');
        expect(Array.from(await pool.rmsNorm(bits, w, { dtype: 'float16' }))).toEqual(Array.from(want));
      } finally {
        await pool.destroy();
      }
    }
  });

  it('createPool({ build }) takes only a threads build', async () => {
    expect((await rejection(createPool({ build: 'simd' as never }))).message).toBe(
      "createPool: options.build must be 'simd-threads' or 'simd-relaxed-threads', got 'simd'",
    );
    expect(await rejection(createPool({ build: 'simd' as never }))).toBeInstanceOf(RangeError);
    const e = await rejection(createPool({ build: 2 as never }));
    expect(e).toBeInstanceOf(TypeError);
    expect(e.message).toBe('createPool: options.build must be a string, got number 2');
  });
});

describe('without relaxed SIMD (Node 20 without its flag)', () => {
  it('init() and createPool() pick simd and simd-threads; forcing a relaxed build is a RangeError saying what is missing; the package keeps working', async () => {
    const script = `
      const lib = await import(${JSON.stringify(join(ROOT, 'dist', 'index.js'))});
      const fs = await import('node:fs');
      const out = { relaxed: lib.relaxedSimdSupported() };
      out.validates = Object.fromEntries(['simd', 'simd-relaxed'].map((b) =>
        [b, WebAssembly.validate(fs.readFileSync(${JSON.stringify(join(ROOT, 'wasm'))} + '/' + b + '/rmsnorm_wasm_bg.wasm'))]));
      for (const build of ['simd-relaxed', 'simd-relaxed-threads']) {
        try { await lib.init({ build }); out[build] = 'loaded'; } catch (e) { out[build] = e.constructor.name + ': ' + e.message; }
      }
      try { await lib.createPool({ build: 'simd-relaxed-threads' }); out.pool = 'created'; } catch (e) { out.pool = e.constructor.name + ': ' + e.message; }
      await lib.init();
      out.build = lib.instance().build;
      out.works = Array.from(lib.rmsNorm(new Float32Array([3, 4]), null, { dim: 2 }));
      const pool = await lib.createPool({ threads: 2 });
      out.poolBuild = pool.build;
      await pool.destroy();
      console.log(JSON.stringify(out));
    `;
    // V8's flag turns relaxed SIMD off where a Node version has it on by default, too.
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--no-experimental-wasm-relaxed-simd', '--input-type=module', '-e', script]);
    expect(stderr).toBe('');
    const r = JSON.parse(stdout) as Record<string, unknown>;
    expect(r.relaxed).toBe(false);
    expect(r.validates).toEqual({ simd: true, 'simd-relaxed': false });
    for (const build of ['simd-relaxed', 'simd-relaxed-threads']) {
      expect(r[build]).toMatch(new RegExp(`^RangeError: loadRmsNorm: build '${build}' needs relaxed SIMD \\(.*--experimental-wasm-relaxed-simd.*\\), which this engine lacks; it runs 'simd', 'simd-threads', 'scalar'$`));
    }
    expect(r.pool).toMatch(/^RangeError: createPool: options.build 'simd-relaxed-threads' needs relaxed SIMD \(.*\), which this engine lacks$/);
    expect(r.build).toBe('simd');
    const works = r.works as number[];
    // the float64 reference, to float32 precision (2 ulps)
    [3, 4].forEach((v, i) => expect(Math.abs(works[i]! - v / Math.sqrt(12.5 + 1e-6))).toBeLessThan(2 ** -22));
    expect(r.poolBuild).toBe('simd-threads');
  });
});

describe('without shared memory (Node started without SharedArrayBuffer)', () => {
  it('a forced threads build is refused alike by init() and createPool(), naming shared memory; createPool() without a build runs in single mode', async () => {
    const script = `
      const lib = await import(${JSON.stringify(join(ROOT, 'dist', 'index.js'))});
      const out = {};
      for (const build of ['simd-threads', 'simd-relaxed-threads']) {
        try { await lib.init({ build }); out['init ' + build] = 'loaded'; } catch (e) { out['init ' + build] = e.constructor.name + ': ' + e.message; }
        try { await lib.createPool({ build }); out['pool ' + build] = 'created'; } catch (e) { out['pool ' + build] = e.constructor.name + ': ' + e.message; }
      }
      const pool = await lib.createPool({ threads: 2 });
      out.mode = pool.mode;
      await pool.destroy();
      console.log(JSON.stringify(out));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, [...process.execArgv.filter((a) => a.includes('relaxed')), '--no-harmony-sharedarraybuffer', '--input-type=module', '-e', script]);
    const r = JSON.parse(stdout) as Record<string, string>;
    const needs = 'needs shared memory \\(SharedArrayBuffer: this Node was started without it\\), which this engine lacks';
    expect(r['init simd-threads']).toMatch(new RegExp(`^RangeError: loadRmsNorm: build 'simd-threads' ${needs}; it runs 'simd'`));
    expect(r['pool simd-threads']).toMatch(new RegExp(`^RangeError: createPool: options\\.build 'simd-threads' ${needs}$`));
    expect(r.mode).toBe('single');
  });
});
