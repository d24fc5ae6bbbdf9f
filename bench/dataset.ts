/**
 * Normalizing a dataset of many files of mixed sizes: `normalizeDataset` against one file of
 * the same bytes (`normalizeFile`) and against `cp -r` of the same directory, in one run, page
 * cache warm. The per-file costs (open, header, temporary file, fsync, rename, manifest line,
 * the pool idling between small files) are what this measures.
 *
 * 1. Writes FILES (default 300) `.npy` files in nested folders: rows drawn log-uniformly from 1
 *    to MAX_ROWS (default 5000) of DIM (default 1024), one in three float16, the rest float32;
 *    and ONE file of the same number of data bytes (float32). All flushed, then read once.
 * 2. Three rounds of: `cp -r` of the folder, `normalizeDataset` of it (THREADS threads), the
 *    same with `durable: false`, and `normalizeFile` of the one file, each into a fresh place
 *    after a `sync` (outside the timing); the best of each is kept. RSS is sampled every 20 ms.
 * 3. Checks one row of SAMPLE files against the float64 reference.
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
import { halfToFloat32, init } from '../dist/index.js';
import { normalizeDataset, normalizeFile, npyHeader, parseNpyHeader } from '../dist/node/index.js';
import { mismatch, refForward, rng, yTolerance } from '../shared/reference.js';

const secs = (t0: number) => (performance.now() - t0) / 1000;

/** Runs the dataset benchmark; returns (and writes) its result. */
export async function benchDataset(): Promise<Record<string, unknown>> {
  const FILES = Number(process.env.FILES ?? 300);
  const MAX_ROWS = Number(process.env.MAX_ROWS ?? 5000);
  const DIM = Number(process.env.DIM ?? 2048);
  const THREADS = Number(process.env.THREADS ?? 2);
  const SAMPLE = 16;
  const root = mkdtempSync(join(process.env.BENCH_DIR ?? os.tmpdir(), 'rmsnorm-bench-dataset-'));
  const IN = join(root, 'in');
  await init();
  try {
    const next = rng(20261125);
    const rels: string[] = [];
    let bytes = 0;
    for (let f = 0; f < FILES; f++) {
      const rows = Math.max(1, Math.round(Math.exp(next() * Math.log(MAX_ROWS))));
      const half = f % 3 === 0;
      const x = new Float32Array(rows * DIM);
      for (let i = 0; i < x.length; i++) x[i] = Math.sin(i * 0.001 + f) * 2;
      const data = half ? new Uint16Array(x.length).map((_, i) => 0x3c00 + ((i * 7 + f) % 0x1000)) : x;
      const rel = join(`g${f % 4}`, `s${f % 7}`, `f${String(f).padStart(4, '0')}.npy`);
      mkdirSync(join(IN, rel, '..'), { recursive: true });
      writeFileSync(join(IN, rel), Buffer.concat([npyHeader([rows, DIM], half ? 'float16' : 'float32'), Buffer.from(data.buffer)]));
      rels.push(rel);
      bytes += data.byteLength;
    }
    // One file of the same bytes, for the rate a dataset should come near.
    const ONE = join(root, 'one.npy');
    const oneRows = Math.floor(bytes / (4 * DIM));
    const one = new Float32Array(oneRows * DIM).map((_, i) => Math.sin(i * 0.001) * 2);
    writeFileSync(ONE, Buffer.concat([npyHeader([oneRows, DIM]), Buffer.from(one.buffer)]));
    execFileSync('sync');
    execFileSync('sh', ['-c', `find "${root}" -type f -exec cat {} + > /dev/null`]);
    const line = (what: string, s: number, b = bytes) => console.log(`${what.padEnd(48)} ${s.toFixed(2).padStart(7)} s  ${(b / s / 1e9).toFixed(2).padStart(6)} GB/s`);
    console.log(`${FILES} files of 1 to ${MAX_ROWS} rows × ${DIM} (float32 and float16, ${(bytes / 1e9).toFixed(2)} GB of data) in ${root}`);

    const fresh = (dir: string) => {
      rmSync(dir, { recursive: true, force: true });
      execFileSync('sync');
    };
    const copy = () => {
      fresh(join(root, 'copy'));
      const t = performance.now();
      execFileSync('cp', ['-r', IN, join(root, 'copy')]);
      return secs(t);
    };
    const rss0 = process.memoryUsage.rss();
    let rssMax = rss0;
    const timer = setInterval(() => (rssMax = Math.max(rssMax, process.memoryUsage.rss())), 20);
    const normalize = async (durable: boolean) => {
      fresh(join(root, 'out'));
      const t = performance.now();
      await normalizeDataset(IN, join(root, 'out'), { threads: THREADS, durable });
      return secs(t);
    };
    const single = async () => {
      fresh(join(root, 'one-out.npy'));
      const t = performance.now();
      await normalizeFile(ONE, join(root, 'one-out.npy'), { threads: THREADS });
      return secs(t);
    };
    // Interleaved rounds: the disk's writeback state drifts, and every side should meet the same.
    const cps: number[] = [];
    const runs: number[] = [];
    const unflushed: number[] = [];
    const ones: number[] = [];
    for (let k = 0; k < 3; k++) {
      cps.push(copy());
      ones.push(await single());
      runs.push(await normalize(true));
      unflushed.push(await normalize(false));
    }
    clearInterval(timer);
    const cp = Math.min(...cps);
    line('cp -r', cp);
    const oneS = Math.min(...ones);
    line(`normalizeFile of one file (${THREADS} threads)`, oneS, oneRows * DIM * 4);
    const wasm = Math.min(...runs);
    line(`normalizeDataset (${THREADS} threads, flushed)`, wasm);
    const fast = Math.min(...unflushed);
    line(`normalizeDataset (${THREADS} threads, durable: false)`, fast);

    for (let f = 0; f < FILES; f += Math.ceil(FILES / SAMPLE)) {
      const row = (path: string) => {
        const b = readFileSync(path);
        const h = parseNpyHeader(new Uint8Array(b), b.length, path);
        const data = b.subarray(h.dataOffset);
        if (h.dtype === 'float32') return new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + DIM * 4));
        return halfToFloat32(new Uint16Array(data.buffer.slice(data.byteOffset, data.byteOffset + DIM * 2)), 'float16');
      };
      const inRow = row(join(IN, rels[f]!));
      const outRow = row(join(root, 'out', rels[f]!));
      const ref = refForward(inRow, null, DIM, 1e-6).y;
      // A float16 output is rounded once more than the float32 reference.
      const bad = f % 3 === 0 ? mismatch(outRow, ref, (_i: number, r: number) => 1e-3 + 1e-3 * Math.abs(r), rels[f]) : mismatch(outRow, ref, yTolerance, rels[f]);
      if (bad) throw new Error(`sampled rows: ${bad}`);
    }
    const gbps = (b: number, s: number) => b / s / 1e9;
    const result = {
      date: new Date().toISOString(),
      node: process.version,
      files: FILES,
      maxRows: MAX_ROWS,
      dim: DIM,
      bytes,
      oneFileBytes: oneRows * DIM * 4,
      threads: THREADS,
      seconds: { cpR: cp, cpRRuns: cps, oneFile: oneS, oneFileRuns: ones, normalizeDataset: wasm, normalizeDatasetRuns: runs, notFlushed: fast, notFlushedRuns: unflushed },
      gbPerS: { cpR: gbps(bytes, cp), oneFile: gbps(oneRows * DIM * 4, oneS), normalizeDataset: gbps(bytes, wasm), notFlushed: gbps(bytes, fast) },
      rssGrowthMiB: (rssMax - rss0) / 2 ** 20,
      ratios: { vsOneFile: gbps(bytes, wasm) / gbps(oneRows * DIM * 4, oneS), vsCpR: cp / wasm, notFlushedVsCpR: cp / fast },
    };
    console.log(
      `normalizeDataset: ${(result.ratios.vsOneFile * 100).toFixed(0)}% of one file's rate, ${(result.ratios.vsCpR * 100).toFixed(0)}% of cp -r's ` +
        `(durable: false ${(result.ratios.notFlushedVsCpR * 100).toFixed(0)}%); RSS growth ${result.rssGrowthMiB.toFixed(0)} MiB`,
    );
    writeFileSync(new URL('./results/dataset.json', import.meta.url), JSON.stringify(result, null, 2) + '\n');
    return result;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await benchDataset();
