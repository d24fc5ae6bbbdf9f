/**
 * Normalizing a dataset of many small files: `normalizeDataset` against `cp -r` of the same
 * directory, in one run, page cache warm. The per-file costs (open, header, temporary file,
 * fsync, rename, manifest line) are what this measures.
 *
 * 1. Writes FILES (default 2000) `.npy` files of ROWS × DIM float32 (default 64 × 4096 = 1 MiB)
 *    in 20 folders, flushed, then read once so they are cached.
 * 2. Three rounds of: `cp -r` of the folder, then `normalizeDataset` of it (THREADS threads),
 *    then the same with `durable: false` (no fsync per output), each into a fresh folder after a
 *    `sync` (outside the timing); the best of each is kept.
 *    RSS is sampled every 20 ms.
 * 4. Checks one row of SAMPLE files against the float64 reference.
 *
 * Run alone: `npx tsx bench/dataset.ts`; `npm run bench:file` runs it after the big file.
 * Writes bench/results/dataset.json.
 * @module
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { normalizeDataset, npyHeader } from '../dist/node/index.js';
import { mismatch, refForward, yTolerance } from '../shared/reference.js';

const secs = (t0: number) => (performance.now() - t0) / 1000;

/** Runs the dataset benchmark; returns (and writes) its result. */
export async function benchDataset(): Promise<Record<string, unknown>> {
  const FILES = Number(process.env.FILES ?? 2000);
  const ROWS = Number(process.env.FILE_ROWS ?? 64);
  const DIM = Number(process.env.DIM ?? 4096);
  const THREADS = Number(process.env.THREADS ?? 2);
  const SAMPLE = 16;
  const bytes = FILES * ROWS * DIM * 4;
  const root = mkdtempSync(join(process.env.BENCH_DIR ?? os.tmpdir(), 'rmsnorm-bench-dataset-'));
  const IN = join(root, 'in');
  try {
    const x = new Float32Array(ROWS * DIM);
    const head = npyHeader([ROWS, DIM]);
    for (let f = 0; f < FILES; f++) {
      for (let i = 0; i < x.length; i++) x[i] = Math.sin(i * 0.001 + f);
      const dir = join(IN, `d${String(f % 20).padStart(2, '0')}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `f${String(f).padStart(5, '0')}.npy`), Buffer.concat([head, Buffer.from(x.buffer)]));
    }
    execFileSync('sync');
    execFileSync('sh', ['-c', `find "${IN}" -type f -exec cat {} + > /dev/null`]);
    const line = (what: string, s: number) => console.log(`${what.padEnd(44)} ${s.toFixed(2).padStart(7)} s  ${(bytes / s / 1e9).toFixed(2).padStart(6)} GB/s`);
    console.log(`${FILES} files of ${ROWS} × ${DIM} float32 (${(bytes / 2 ** 30).toFixed(2)} GiB) in ${root}`);

    const copy = () => {
      rmSync(join(root, 'copy'), { recursive: true, force: true });
      execFileSync('sync');
      const t = performance.now();
      execFileSync('cp', ['-r', IN, join(root, 'copy')]);
      return secs(t);
    };
    const rss0 = process.memoryUsage.rss();
    let rssMax = rss0;
    const timer = setInterval(() => (rssMax = Math.max(rssMax, process.memoryUsage.rss())), 20);
    const normalize = async (durable: boolean) => {
      // Into a fresh directory each time, as cp -r copies into one.
      rmSync(join(root, 'out'), { recursive: true, force: true });
      execFileSync('sync');
      const t = performance.now();
      await normalizeDataset(IN, join(root, 'out'), { threads: THREADS, durable });
      return secs(t);
    };
    // Interleaved rounds: the disk's writeback state drifts, and both sides should meet the same.
    const cps: number[] = [];
    const runs: number[] = [];
    const unflushed: number[] = [];
    for (let k = 0; k < 3; k++) {
      cps.push(copy());
      runs.push(await normalize(true));
      unflushed.push(await normalize(false));
    }
    clearInterval(timer);
    const cp = Math.min(...cps);
    line('cp -r', cp);
    const wasm = Math.min(...runs);
    line(`normalizeDataset (${THREADS} threads, flushed)`, wasm);
    const fast = Math.min(...unflushed);
    line(`normalizeDataset (${THREADS} threads, durable: false)`, fast);

    for (let f = 0; f < FILES; f += Math.ceil(FILES / SAMPLE)) {
      const rel = join(`d${String(f % 20).padStart(2, '0')}`, `f${String(f).padStart(5, '0')}.npy`);
      const inRow = new Float32Array(readFileSync(join(IN, rel)).buffer.slice(head.length, head.length + DIM * 4));
      const outRow = new Float32Array(readFileSync(join(root, 'out', rel)).buffer.slice(head.length, head.length + DIM * 4));
      const bad = mismatch(outRow, refForward(inRow, null, DIM, 1e-6).y, yTolerance, rel);
      if (bad) throw new Error(`sampled rows: ${bad}`);
    }
    const result = {
      date: new Date().toISOString(),
      node: process.version,
      files: FILES,
      rowsPerFile: ROWS,
      dim: DIM,
      bytes,
      threads: THREADS,
      seconds: { cpR: cp, cpRRuns: cps, normalizeDataset: wasm, normalizeDatasetRuns: runs, notFlushed: fast, notFlushedRuns: unflushed },
      rssGrowthMiB: (rssMax - rss0) / 2 ** 20,
      ratios: { vsCpR: cp / wasm, notFlushedVsCpR: cp / fast },
    };
    console.log(
      `normalizeDataset: ${(result.ratios.vsCpR * 100).toFixed(0)}% of cp -r's speed (durable: false ${(result.ratios.notFlushedVsCpR * 100).toFixed(0)}%); ` +
        `RSS growth ${result.rssGrowthMiB.toFixed(0)} MiB`,
    );
    writeFileSync(new URL('./results/dataset.json', import.meta.url), JSON.stringify(result, null, 2) + '\n');
    return result;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await benchDataset();
