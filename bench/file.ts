/**
 * Normalizing files as a user's batch job does, against what copies the same bytes, in one
 * run, interleaved, medians of ROUNDS:
 *
 * 1. Writes IN: a ROWS × DIM float32 `.npy` (default 262144 × 4096 = 4 GiB), flushed, then read
 *    once so that it is in the page cache.
 * 2. Each round, every step from the same start (bench/fresh-start.ts): `cp IN` (the kernel
 *    copies inside itself, `copy_file_range`: no byte passes through a program), the same then
 *    `fsync` of the copy, a one-thread JavaScript loop that reads and writes IN in 8 MiB chunks
 *    (the most a program that must see every byte can do on one thread), `normalizeFile`
 *    without fsync on 1, 2, 4, … threads up to twice the cores, with its default fsync, and
 *    with `checksum` (SHA-256 of the output); and the command as users run it, a process from
 *    its start to its end (`rmsnorm-wasm normalize IN OUT`, default threads), without and with
 *    fsync.
 * 3. The command's start-up: `rmsnorm-wasm normalize` of a one-row file, from the process's
 *    start to its end.
 * 4. Checks SAMPLE (64) random rows of OUT against the float64 reference.
 * 5. The dataset benchmark (bench/dataset.ts).
 *
 * Run: `npm run bench:file` (env ROWS, DIM, ROUNDS, BENCH_DIR: where the files go, default the
 * OS temp dir; it needs 3 × the file's size free). Writes bench/results/file.json and
 * file-threads.svg.
 * @module
 */
import { benchDataset } from './dataset.js';
import { renderCurve } from './curve-svg.js';
import { writeBenchmarks } from './docs.js';
import { freshStart } from './fresh-start.js';
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, fsyncSync, mkdtempSync, openSync, readSync, rmSync, statfsSync, writeFileSync, writeSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { normalizeFile, npyHeader } from '../dist/node/index.js';
import { mismatch, refForward, yTolerance } from '../shared/reference.js';

const ROWS = Number(process.env.ROWS ?? 262144);
const DIM = Number(process.env.DIM ?? 4096);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const SAMPLE = 64;
const DATA = ROWS * DIM * 4;
const GB = 1e9;
const CORES = os.availableParallelism();
const THREADS = [...new Set([1, 2, 4, 8, 16, 32, 64].filter((t) => t < CORES).concat([CORES, 2 * CORES]))].sort((a, b) => a - b);
const BIN = new URL('../bundle/node/bin.js', import.meta.url).pathname;

const root = mkdtempSync(join(process.env.BENCH_DIR ?? os.tmpdir(), 'rmsnorm-bench-file-'));
const IN = join(root, 'in.npy');
const OUT = join(root, 'out.npy');
const free = statfsSync(root).bavail * statfsSync(root).bsize;
if (free < 3.2 * DATA) throw new Error(`${root}: ${(free / GB).toFixed(1)} GB free, the bench needs ${((3.2 * DATA) / GB).toFixed(1)}`);

const secs = (t0: number) => (performance.now() - t0) / 1000;
const median = (v: readonly number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;

/** A one-thread loop that reads `src` and writes `dst` in 8 MiB chunks. */
function copyLoop(src: string, dst: string): void {
  const buf = Buffer.allocUnsafe(8 << 20);
  const i = openSync(src, 'r');
  const o = openSync(dst, 'w');
  for (let pos = 0, n; (n = readSync(i, buf, 0, buf.length, pos)) > 0; pos += n) writeSync(o, buf, 0, n, pos);
  closeSync(i);
  closeSync(o);
}

try {
  console.log(`${ROWS} × ${DIM} float32 .npy = ${(DATA / 2 ** 30).toFixed(2)} GiB in ${root}; ${os.cpus()[0]?.model}, ${CORES} cores; load ${os.loadavg()[0]!.toFixed(2)}`);
  // 1. The input: xorshift values in [-2, 2), 64 MiB at a time.
  let t0 = performance.now();
  const block = new Float32Array(16 << 20);
  let s = 0x9e3779b9;
  let fd = openSync(IN, 'w');
  writeSync(fd, npyHeader([ROWS, DIM]));
  for (let done = 0; done < DATA; ) {
    const n = Math.min(block.length, (DATA - done) / 4);
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

  // 2. Interleaved rounds, every step from the same start.
  const COPY = join(root, 'copy.npy');
  const rss0 = process.memoryUsage.rss();
  let rssMax = rss0;
  const timer = setInterval(() => (rssMax = Math.max(rssMax, process.memoryUsage.rss())), 20);
  const steps: [string, () => Promise<unknown> | unknown][] = [
    ['cp', () => execFileSync('cp', [IN, COPY])],
    ['cp + fsync', () => {
      execFileSync('cp', [IN, COPY]);
      const c = openSync(COPY, 'r+');
      fsyncSync(c);
      closeSync(c);
    }],
    ['loop', () => copyLoop(IN, COPY)],
    ...THREADS.map((t): [string, () => Promise<unknown>] => [`threads ${t}`, () => normalizeFile(IN, OUT, { threads: t, durable: false })]),
    ['default', () => normalizeFile(IN, OUT)],
    ['checksum', () => normalizeFile(IN, OUT, { durable: false, checksum: true })],
    ['command', () => execFileSync(process.execPath, [BIN, 'normalize', IN, OUT, '--no-fsync', '--quiet'])],
    ['command + fsync', () => execFileSync(process.execPath, [BIN, 'normalize', IN, OUT, '--quiet'])],
  ];
  const times = new Map<string, number[]>(steps.map(([k]) => [k, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const [k, step] of steps) {
      rmSync(COPY, { force: true });
      rmSync(OUT, { force: true });
      freshStart(DATA);
      t0 = performance.now();
      await step();
      times.get(k)!.push(secs(t0));
    }
    console.log(`round ${r + 1}: ${steps.map(([k]) => `${k} ${times.get(k)![r]!.toFixed(2)} s`).join(', ')}`);
  }
  clearInterval(timer);
  const med = Object.fromEntries([...times].map(([k, v]) => [k, median(v)]));
  const rate = (k: string) => DATA / med[k]! / GB;
  const line = (what: string, k: string) => console.log(`${what.padEnd(52)} ${med[k]!.toFixed(2).padStart(6)} s  ${rate(k).toFixed(2).padStart(6)} GB/s`);
  console.log('\nmedians:');
  line('cp', 'cp');
  line('cp, then fsync of the copy', 'cp + fsync');
  line('one-thread JavaScript loop: read and write 8 MiB', 'loop');
  for (const t of THREADS) line(`normalizeFile, ${t} thread${t > 1 ? 's' : ''}, no fsync`, `threads ${t}`);
  line(`normalizeFile, default (${CORES} threads, fsync)`, 'default');
  line(`normalizeFile, checksum, no fsync`, 'checksum');
  line('rmsnorm-wasm normalize (a process), no fsync', 'command');
  line('rmsnorm-wasm normalize (a process), fsync', 'command + fsync');

  // 3. Start-up: a one-row file through the command, process start to end.
  const one = join(root, 'one.npy');
  writeFileSync(one, Buffer.concat([npyHeader([1, DIM]), Buffer.from(new Float32Array(DIM).fill(0.5).buffer)]));
  const starts: number[] = [];
  for (let k = 0; k < 7; k++) {
    t0 = performance.now();
    const r = spawnSync(process.execPath, [BIN, 'normalize', one, join(root, 'one-out.npy'), '--quiet']);
    if (r.status !== 0) throw new Error(`one-row file: ${r.stderr}`);
    starts.push(secs(t0));
  }
  const startup = median(starts);
  console.log(`\nrmsnorm-wasm normalize of a one-row file: ${(startup * 1000).toFixed(0)} ms from the process's start to its end (median of 7)`);

  // 4. Sampled rows against float64.
  const data = npyHeader([ROWS, DIM]).length;
  const ofd = openSync(OUT, 'r');
  const ifd = openSync(IN, 'r');
  const row = new Float32Array(DIM);
  const got = new Float32Array(DIM);
  let bad: string | null = null;
  for (let k = 0; k < SAMPLE && !bad; k++) {
    const r = Math.floor((k * 2654435761) % ROWS);
    readSync(ifd, row, 0, DIM * 4, data + r * DIM * 4);
    readSync(ofd, got, 0, DIM * 4, data + r * DIM * 4);
    bad = mismatch(got, refForward(row, null, DIM, 1e-6).y, yTolerance, `row ${r}`);
  }
  closeSync(ofd);
  closeSync(ifd);
  if (bad) throw new Error(`sampled rows: ${bad}`);
  console.log(`${SAMPLE} sampled rows within float32 tolerance of float64`);

  const result = {
    date: new Date().toISOString(),
    cpu: os.cpus()[0]?.model ?? '',
    cores: CORES,
    load: os.loadavg(),
    node: process.version,
    rows: ROWS,
    dim: DIM,
    bytes: DATA,
    rounds: ROUNDS,
    seconds: med,
    runs: Object.fromEntries(times),
    threads: THREADS.map((t) => ({ threads: t, seconds: med[`threads ${t}`]!, gbPerS: rate(`threads ${t}`) })),
    startupSeconds: startup,
    rssGrowthMiB: (rssMax - rss0) / 2 ** 20,
    ratios: {
      vsLoop: med.loop! / med[`threads ${CORES}`]!,
      vsCp: med.cp! / med[`threads ${CORES}`]!,
      fsyncVsCpFsync: med['cp + fsync']! / med.default!,
      checksumCost: med.checksum! / med[`threads ${CORES}`]!,
      commandVsCp: med.cp! / med.command!,
      commandFsyncVsCpFsync: med['cp + fsync']! / med['command + fsync']!,
    },
    sampledRowsOk: true,
  };
  console.log(
    `\nnormalizeFile on ${CORES} threads: ${result.ratios.vsLoop.toFixed(2)}× the one-thread loop, ${result.ratios.vsCp.toFixed(2)}× cp; ` +
      `with fsync ${result.ratios.fsyncVsCpFsync.toFixed(2)}× cp + fsync; --checksum takes ${result.ratios.checksumCost.toFixed(2)}× the time; RSS growth ${result.rssGrowthMiB.toFixed(0)} MiB\n` +
      `the command as a process: ${result.ratios.commandVsCp.toFixed(2)}× cp, with fsync ${result.ratios.commandFsyncVsCpFsync.toFixed(2)}× cp + fsync (${result.cpu})`,
  );
  writeFileSync(new URL('./results/file.json', import.meta.url), JSON.stringify(result, null, 2) + '\n');
  writeFileSync(
    new URL('./results/file-threads.svg', import.meta.url),
    renderCurve({
      title: 'normalizeFile: GB/s by threads',
      subtitle: `${(DATA / 2 ** 30).toFixed(0)} GiB .npy in the page cache, no fsync; ${result.cpu}, ${CORES} cores; ${result.date.slice(0, 10)}`,
      yLabel: 'GB/s',
      cores: CORES,
      series: [{ label: 'normalizeFile', color: '#1f5fa8', points: result.threads.map((t) => [t.threads, t.gbPerS]) }],
      refs: [
        { label: 'cp', color: '#c2185b', y: rate('cp') },
        { label: 'JS read/write loop', color: '#6d6d6d', y: rate('loop') },
      ],
    }),
  );
} finally {
  rmSync(root, { recursive: true, force: true });
}
// 5. Many files of mixed formats: the per-file costs (bench/dataset.ts).
await benchDataset();
writeBenchmarks();
