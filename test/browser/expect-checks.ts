/**
 * Assertions on the summary that fixtures/check.js produces in a page (or in Node).
 * @module
 */
import { expect } from 'vitest';

/** Per-output error ratios: |got − ref| / tolerance, so ≤ 1 passes (see fixtures/check.js). */
export interface Ratios {
  y: number;
  dx: number;
  dweight: number;
}

/** The JSON summary of fixtures/check.js `runChecks`. */
export interface CheckSummary {
  crossOriginIsolated: boolean;
  sharedArrayBuffer: boolean;
  build: string;
  /** The pool's build (null without a pool). */
  poolBuild: string | null;
  mode: 'threads' | 'single' | null;
  threads: number | null;
  cases: { shape: string; sync: Ratios; pool: Ratios | null; poolEqualsSync: boolean | null }[];
  hash: string;
  syncHash: string;
  /** Hashes of the half-precision results per dtype (fixtures/check.js halfChecks). */
  halfHash: Record<string, string>;
  /** createRmsNorm on half data gave the one-off calls' bits (Float16Arrays in and out where the engine has them). */
  halfLayerSame: boolean;
  /** Hash of the quantized outputs (fixtures/check.js quantChecks). */
  quantHash: string;
  /** A pool on shared memory on arrays in SharedArrayBuffers: the sync call's bits in shared results (null without such a pool). */
  sharedSame: boolean | null;
}

/**
 * Every shape within tolerance of the float64 reference, for the sync API and the pool, and
 * the pool bit-identical to the sync API (the kernels are deterministic, see crate/src/kernel/reduce.rs).
 */
export function expectChecksPass(r: CheckSummary, withPool = true): void {
  expect(r.cases.length).toBeGreaterThan(0);
  for (const c of r.cases) {
    const label = `${c.shape}`;
    expect.soft(c.sync.y, `${label} sync y`).toBeLessThanOrEqual(1);
    expect.soft(c.sync.dx, `${label} sync dx`).toBeLessThanOrEqual(1);
    expect.soft(c.sync.dweight, `${label} sync dweight`).toBeLessThanOrEqual(1);
    if (withPool) {
      expect(c.pool, `${label} pool ran`).not.toBeNull();
      expect.soft(c.pool!.y, `${label} pool y`).toBeLessThanOrEqual(1);
      expect.soft(c.pool!.dx, `${label} pool dx`).toBeLessThanOrEqual(1);
      expect.soft(c.pool!.dweight, `${label} pool dweight`).toBeLessThanOrEqual(1);
      expect.soft(c.poolEqualsSync, `${label} pool bit-identical to sync`).toBe(true);
    }
  }
  if (withPool && r.mode === 'threads') expect(r.sharedSame, 'the pool on arrays in SharedArrayBuffers: the sync bits, shared results').toBe(true);
}

/** The summary of fixtures/engine-checks.js: a {@link CheckSummary} per build the engine runs. */
export interface EngineSummary {
  engine: string;
  /** Whether the engine validates relaxed SIMD. */
  relaxed: boolean;
  /** Whether the page has shared memory (threads). */
  shared: boolean;
  /** What `init()` and `createPool()` loaded without a `build`. */
  defaults: { build: string; poolBuild: string };
  runs: Record<string, CheckSummary>;
  /** Builds the engine cannot run: what `loadRmsNorm` and `createPool` said when asked for them. */
  refused: Record<string, string>;
}

/**
 * One engine's runs: every build it can run was checked (the relaxed builds exactly where it
 * has relaxed SIMD), each within tolerance of the float64 reference, each plain build's pool in
 * threads mode on its threads twin; every float32 and half-precision result bit-identical to
 * the `simd` run of `ref` (Node); and the defaults are the relaxed builds exactly where the
 * engine has relaxed SIMD.
 */
export function expectEngineChecksPass(r: EngineSummary, ref: EngineSummary): void {
  const plain = r.relaxed ? ['simd', 'simd-relaxed'] : ['simd'];
  expect(Object.keys(r.runs).sort()).toEqual(plain.flatMap((b) => (r.shared ? [b, `${b}-threads`] : [b])).sort());
  const want = ref.runs.simd!;
  const b = r.relaxed ? 'simd-relaxed' : 'simd';
  for (const [build, s] of Object.entries(r.runs)) {
    expect(s.build, build).toBe(build);
    const isPlain = plain.includes(build);
    expectChecksPass(s, isPlain);
    if (isPlain) {
      expect(s.mode, build).toBe(r.shared ? 'threads' : 'single');
      // In 'single' mode the pool runs the default build's plain twin.
      expect(s.poolBuild, build).toBe(r.shared ? `${build}-threads` : b);
      expect(s.hash, `${build}: pool vs sync`).toBe(s.syncHash);
    }
    expect(s.syncHash, `${build}: float32`).toBe(want.syncHash);
    expect(s.halfHash, `${build}: half precision`).toEqual(want.halfHash);
    expect(s.halfLayerSame, `${build}: createRmsNorm on half data`).toBe(true);
    expect(s.quantHash, `${build}: quantized output`).toBe(want.quantHash);
  }
  expect(r.defaults).toEqual({ build: b, poolBuild: r.shared ? `${b}-threads` : b });
  // Every build it cannot run was refused by both, each saying what the engine lacks.
  const cannot = [...(r.relaxed ? [] : ['simd-relaxed', 'simd-relaxed-threads']), ...(r.shared ? [] : plain.map((p) => `${p}-threads`))];
  expect(Object.keys(r.refused).sort()).toEqual(cannot.sort());
  for (const [build, text] of Object.entries(r.refused)) {
    for (const line of text.split('\n')) {
      expect(line, build).toMatch(new RegExp(`^RangeError: (loadRmsNorm: build|createPool: options\\.build) '${build}' needs .*, which this engine lacks`));
    }
    if (!r.shared && plain.includes(build.replace(/-threads$/, '')) && build.endsWith('-threads')) {
      expect(text.split('\n'), `${build}: the sync API and the pool refuse it alike`).toHaveLength(2);
      expect(text, build).toMatch(/needs shared memory/);
    }
  }
}
