/**
 * A run's options are checked once: the file functions check a run's parameter options when it
 * starts, make each array's call of them, and hand every chunk to the pool (or the calling
 * thread) as a call checked already — counted here through the counter of the checks.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { createPool } from '../dist/index.js';
import { createNormalizeStream, normalizeDataset, normalizeFile, npyHeader } from '../dist/node/index.js';
import { paramOptionChecks } from '../dist/call/check/params.js';

const root = mkdtempSync(join(tmpdir(), 'rmsnorm-once-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const npy = (rows: number, dim: number, seed: number): Buffer => {
  const x = new Float32Array(rows * dim).map((_, k) => Math.cos(k * 0.1 + seed));
  return Buffer.concat([npyHeader([rows, dim]), Buffer.from(x.buffer)]);
};

/** How many checks of parameter options `run` makes. */
async function checksOf(run: () => Promise<unknown>): Promise<number> {
  const before = paramOptionChecks();
  await run();
  return paramOptionChecks() - before;
}

describe('a run\'s options are checked once', () => {
  const data = join(root, 'data');
  mkdirSync(data);
  // 12 files of several chunks each (chunkBytes), of two row lengths.
  for (let i = 0; i < 12; i++) writeFileSync(join(data, `f${i}.npy`), npy(256, i % 2 ? 64 : 96, i));
  const options = { eps: 1e-5, offset: 0.5, weight: null, chunkBytes: 4096 } as const;

  it('a dataset of 12 files, in many chunks each, front to back on the calling thread: one check', async () => {
    expect(await checksOf(() => normalizeDataset(data, join(root, 'o1'), { ...options, offset: 0, threads: 1 }))).toBe(1);
  });

  it('the same on a pool of 2 threads (the workers take the rows at positions): one check', async () => {
    expect(await checksOf(() => normalizeDataset(data, join(root, 'o2'), { eps: 1e-5, threads: 2, chunkBytes: 4096 }))).toBe(1);
  });

  it('one file on a pool given, in 6 chunks: one check; the counter does count (a one-off call is one check)', async () => {
    const pool = await createPool({ threads: 2 });
    try {
      const w = new Float32Array(96).fill(1.5);
      expect(await checksOf(() => normalizeFile(join(data, 'f0.npy'), join(root, 'one.npy'), { pool, weight: w, offset: 0.5, chunkBytes: 4096 }))).toBe(1);
      expect(await checksOf(() => pool.rmsNorm(new Float32Array(96 * 4096), w, { eps: 1e-5, offset: 1 }))).toBeGreaterThanOrEqual(1);
    } finally {
      await pool.destroy();
    }
  });

  it('a stream of many chunks: one check, when it is made', async () => {
    const rows = Buffer.from(new Float32Array(64 * 200).map((_, k) => Math.sin(k)).buffer);
    const n = await checksOf(
      () =>
        new Promise<void>((ok, fail) => {
          const s = createNormalizeStream({ dim: 64, eps: 1e-5 });
          s.on('data', () => {}).on('end', ok).on('error', fail);
          Readable.from([rows.subarray(0, 1000), rows.subarray(1000, 20_000), rows.subarray(20_000)]).pipe(s);
        }),
    );
    expect(n).toBe(1);
  });
});
