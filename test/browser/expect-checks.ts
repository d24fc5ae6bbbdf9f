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
  mode: 'threads' | 'single' | null;
  threads: number | null;
  cases: { shape: string; sync: Ratios; pool: Ratios | null; poolEqualsSync: boolean | null }[];
  hash: string;
  syncHash: string;
}

/**
 * Every shape within tolerance of the float64 reference, for the sync API and the pool, and
 * the pool bit-identical to the sync API (the kernels are deterministic, see crate/src/kernel.rs).
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
}
