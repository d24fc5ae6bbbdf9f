/**
 * Normalizing a file bigger than the wasm heap: `normalizeFile` on the pool against
 * a plain file copy and a plain-JS implementation, all on the same file in one run.
 *
 * 1. Writes IN: ROWS × DIM float32 (default 524288 × 4096 = 8 GiB), then reads it once so that
 *    it is in the page cache.
 * 2. `cp IN COPY`, and the same followed by fsync of the copy (normalizeFile flushes its
 *    output before renaming it into place, so the like-for-like copy is the flushed one).
 * 3. `normalizeFile(IN, OUT)` with THREADS (default 2) threads, the better of two runs; the
 *    process's RSS is sampled every 20 ms and its growth over the runs reported.
 * 4. A plain-JS implementation: read a 16 MiB chunk, normalize it with the naive loop, write it;
 *    fsync at the end.
 * 5. Checks SAMPLE (64) random rows of OUT against the float64 reference.
 * 6. The dataset benchmark (bench/dataset.ts): a few hundred files of mixed sizes against one
 *    file of the same bytes and `cp -r`.
 *
 * Run: `npm run bench:file` (env ROWS, DIM, THREADS, BENCH_DIR: where the files go, default
 * the OS temp dir; it needs 3 × the file's size free). Writes bench/results/file.json.
 * @module
 */
import { benchDataset } from './dataset.js';
import { writeBenchmarks } from './docs.js';
import { execFileSync } from 'node:child_process';
import { closeSync, fsyncSync, mkdtempSync, openSync, readSync, rmSync, statfsSync, writeSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { normalizeFile } from '../dist/node/index.js';
import { mismatch, refForward, yTolerance } from '../shared/reference.js';

const ROWS = Number(process.env.ROWS ?? 524288);
const DIM = Number(process.env.DIM ?? 4096);
const THREADS = Number(process.env.THREADS ?? 2);
const SAMPLE = 64;
const BYTES = ROWS * DIM * 4;
const GB = 1e9;

const root = mkdtempSync(join(process.env.BENCH_DIR ?? os.tmpdir(), 'rmsnorm-bench-file-'));
const IN = join(root, 'in.f32');
const COPY = join(root, 'copy.f32');
const OUT = join(root, 'out.f32');
const JSOUT = join(root, 'js-out.f32');
const free = statfsSync(root).bavail * statfsSync(root).bsize;
if (free < 2.2 * BYTES) throw new Error(`${root}: ${(free / GB).toFixed(1)} GB free, the bench needs ${((2.2 * BYTES) / GB).toFixed(1)}`);

const secs = (t0: number) => (performance.now() - t0) / 1000;
const line = (what: string, s: number) => console.log(`${what.padEnd(44)} ${s.toFixed(2).padStart(7)} s  ${(BYTES / s / GB).toFixed(2).padStart(6)} GB/s`);

try {
  console.log(`${ROWS} × ${DIM} float32 = ${(BYTES / 2 ** 30).toFixed(2)} GiB in ${root}; load ${os.loadavg()[0]!.toFixed(2)}`);
  // 1. The input: xorshift values in [-2, 2), 64 MiB at a time.
  let t0 = performance.now();
  const block = new Float32Array(16 << 20);
  let s = 0x9e3779b9;
  let fd = openSync(IN, 'w');
  for (let done = 0; done < BYTES; ) {
    const n = Math.min(block.length, (BYTES - done) / 4);
    for (let i = 0; i < n; i++) {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      block[i] = (s >>> 0) / 2 ** 30 - 2;
    }
    writeSync(fd, block, 0, n * 4);
    done += n * 4;
  }
  fsyncSync(fd); // on disk and clean: no writeback of it competes with what is measured
  closeSync(fd);
  fd = openSync(IN, 'r');
  for (let pos = 0; readSync(fd, block, 0, block.byteLength, pos) > 0; pos += block.byteLength);
  closeSync(fd);
  console.log(`input written and read back into the page cache in ${secs(t0).toFixed(1)} s`);

  // 2. Copies: the better of two runs of each (a removed copy's blocks are freed in the background).
  const copy = (flush: boolean) => {
    const t = performance.now();
    execFileSync('cp', [IN, COPY]);
    if (flush) {
      const cfd = openSync(COPY, 'r+');
      fsyncSync(cfd);
      closeSync(cfd);
    }
    const took = secs(t);
    rmSync(COPY);
    execFileSync('sync');
    return took;
  };
  const cp = Math.min(copy(false), copy(false));
  line('cp', cp);
  const cpSync = Math.min(copy(true), copy(true));
  line('cp + fsync', cpSync);

  // 3. normalizeFile, the better of two runs (as for cp), with the RSS sampled.
  const rss0 = process.memoryUsage.rss();
  let rssMax = rss0;
  const timer = setInterval(() => (rssMax = Math.max(rssMax, process.memoryUsage.rss())), 20);
  const runs: number[] = [];
  let summary!: Awaited<ReturnType<typeof normalizeFile>>;
  for (let k = 0; k < 2; k++) {
    t0 = performance.now();
    summary = await normalizeFile(IN, OUT, { format: 'raw', dim: DIM, threads: THREADS });
    runs.push(secs(t0));
    execFileSync('sync');
  }
  clearInterval(timer);
  rssMax = Math.max(rssMax, process.memoryUsage.rss());
  const wasm = Math.min(...runs);
  line(`normalizeFile (${THREADS} threads, flushed)`, wasm);
  console.log(`  runs ${runs.map((r) => r.toFixed(2)).join(' s, ')} s; RSS growth ${((rssMax - rss0) / 2 ** 20).toFixed(0)} MiB (${(rss0 / 2 ** 20).toFixed(0)} → ${(rssMax / 2 ** 20).toFixed(0)} MiB); its summary: ${summary.gbPerS.toFixed(2)} GB/s`);

  // 4. Plain JS: read, naive loop, write; fsync at the end.
  t0 = performance.now();
  const chunkRows = Math.max(1, Math.floor((16 << 20) / (4 * DIM)));
  const xin = new Float32Array(chunkRows * DIM);
  const yout = new Float32Array(chunkRows * DIM);
  const ifd = openSync(IN, 'r');
  const ofd = openSync(JSOUT, 'w');
  for (let r0 = 0; r0 < ROWS; r0 += chunkRows) {
    const n = Math.min(chunkRows, ROWS - r0);
    readSync(ifd, xin, 0, n * DIM * 4, r0 * DIM * 4);
    for (let r = 0; r < n; r++) {
      const o = r * DIM;
      let ss = 0;
      for (let i = 0; i < DIM; i++) ss += xin[o + i]! * xin[o + i]!;
      const rs = 1 / Math.sqrt(ss / DIM + 1e-6);
      for (let i = 0; i < DIM; i++) yout[o + i] = xin[o + i]! * rs;
    }
    writeSync(ofd, yout, 0, n * DIM * 4, r0 * DIM * 4);
  }
  fsyncSync(ofd);
  closeSync(ofd);
  closeSync(ifd);
  const js = secs(t0);
  line('plain JS (read, naive loop, write, fsync)', js);
  rmSync(JSOUT);

  // 5. Sampled rows against float64.
  const ofd2 = openSync(OUT, 'r');
  const ifd2 = openSync(IN, 'r');
  const row = new Float32Array(DIM);
  const got = new Float32Array(DIM);
  let bad: string | null = null;
  for (let k = 0; k < SAMPLE && !bad; k++) {
    const r = Math.floor((k * 2654435761) % ROWS);
    readSync(ifd2, row, 0, DIM * 4, r * DIM * 4);
    readSync(ofd2, got, 0, DIM * 4, r * DIM * 4);
    bad = mismatch(got, refForward(row, null, DIM, 1e-6).y, yTolerance, `row ${r}`);
  }
  closeSync(ofd2);
  closeSync(ifd2);
  if (bad) throw new Error(`sampled rows: ${bad}`);
  console.log(`${SAMPLE} sampled rows within float32 tolerance of float64`);

  const result = {
    date: new Date().toISOString(),
    load: os.loadavg(),
    node: process.version,
    rows: ROWS,
    dim: DIM,
    bytes: BYTES,
    threads: THREADS,
    seconds: { cp, cpFsync: cpSync, normalizeFile: wasm, normalizeFileRuns: runs, plainJs: js },
    rssGrowthMiB: (rssMax - rss0) / 2 ** 20,
    ratios: { vsCp: cp / wasm, vsCpFsync: cpSync / wasm, vsPlainJs: js / wasm },
    sampledRowsOk: true,
  };
  console.log(
    `normalizeFile: ${(result.ratios.vsCp * 100).toFixed(0)}% of cp's speed, ${(result.ratios.vsCpFsync * 100).toFixed(0)}% of cp + fsync's, ` +
      `${result.ratios.vsPlainJs.toFixed(2)}× plain JS; RSS growth ${result.rssGrowthMiB.toFixed(0)} MiB`,
  );
  writeFileSync(new URL('./results/file.json', import.meta.url), JSON.stringify(result, null, 2) + '\n');
} finally {
  rmSync(root, { recursive: true, force: true });
}
// 6. Many small files: the per-file costs (bench/dataset.ts).
await benchDataset();
writeBenchmarks();
