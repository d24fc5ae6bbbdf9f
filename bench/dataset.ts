/**
 * Normalizing a dataset as a user brings it (scripts/make-dataset.mjs: nested .npy files of 1
 * to 20 000 rows in float32 and float16, safetensors shards with bfloat16 beside int64 and
 * int32 tensors, a Hugging Face cache of links to blobs; MB, default 560) with the command, as
 * a user runs it, against `cp -r` of the same folder, in one run, interleaved, medians of
 * ROUNDS, page cache warm, every step from the same start (bench/fresh-start.ts): `cp -r`, the
 * same then `sync`, `rmsnorm-wasm normalize DIR --out-dir OUT` with `--no-fsync`, with its
 * default fsync of each output, and with `--checksum`. Times are of whole processes, start-up
 * included. Then checks rows of sampled `.npy` outputs against the float64 reference, and
 * measures what one more file costs a run (ms per file, {@link perFileCost}).
 *
 * Run alone: `npx tsx bench/dataset.ts`; `npm run bench:file` runs it after the big file.
 * Writes bench/results/dataset.json.
 * @module
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { halfToFloat32, init } from '../dist/index.js';
import { npyHeader, parseNpyHeader } from '../dist/node/index.js';
import { mismatch, refForward, yTolerance } from '../shared/reference.js';
import { freshStart } from './fresh-start.js';

const secs = (t0: number) => (performance.now() - t0) / 1000;
const median = (v: readonly number[]) => [...v].sort((a, b) => a - b)[v.length >> 1]!;
const BIN = fileURLToPath(new URL('../bundle/node/bin.js', import.meta.url));
const MAKE = fileURLToPath(new URL('../scripts/make-dataset.mjs', import.meta.url));

/** Files of the per-file cost's dataset. */
const PER_FILE_COUNT = 2000;

/**
 * What one more file costs a dataset run, in ms: the command over PER_FILE_COUNT `.npy` files
 * of one row of 64 float32 and over one such file (whole processes, medians of `rounds`),
 * the difference over the files added — its listing, header, temporary file, flush, rename and
 * manifest line, the normalization of a row being nothing.
 */
function perFileCost(root: string, rounds: number): { noFsync: number; default: number } {
  const row = Buffer.concat([npyHeader([1, 64]), Buffer.from(new Float32Array(64).fill(1).buffer)]);
  const dirs = { one: join(root, 'one'), many: join(root, 'many') };
  for (const [k, d] of Object.entries(dirs)) {
    mkdirSync(d, { recursive: true });
    for (let i = 0; i < (k === 'one' ? 1 : PER_FILE_COUNT); i++) writeFileSync(join(d, `f${String(i).padStart(5, '0')}.npy`), row);
  }
  const out = join(root, 'per-file-out');
  const time = (dir: string, flags: string[]) => {
    const v: number[] = [];
    for (let r = 0; r < rounds; r++) {
      rmSync(out, { recursive: true, force: true });
      const t = performance.now();
      execFileSync(process.execPath, [BIN, 'normalize', dir, '--out-dir', out, '--quiet', ...flags]);
      v.push(secs(t));
    }
    return median(v);
  };
  const cost = (flags: string[]) => ((time(dirs.many, flags) - time(dirs.one, flags)) * 1000) / (PER_FILE_COUNT - 1);
  return { noFsync: cost(['--no-fsync']), default: cost([]) };
}

/** Runs the dataset benchmark; returns (and writes) its result. */
export async function benchDataset(): Promise<Record<string, unknown>> {
  const MB = Number(process.env.DATASET_MB ?? 560);
  const ROUNDS = Number(process.env.ROUNDS ?? 3);
  const root = mkdtempSync(join(process.env.BENCH_DIR ?? os.tmpdir(), 'rmsnorm-bench-dataset-'));
  const IN = join(root, 'in');
  const OUT = join(root, 'out');
  await init();
  try {
    const made = JSON.parse(execFileSync(process.execPath, [MAKE, IN, String(MB)], { encoding: 'utf8' })) as { files: number; bytes: number; normalizedBytes: number };
    execFileSync('sync');
    execFileSync('sh', ['-c', `find "${IN}" -type f -exec cat {} + > /dev/null`]);
    console.log(`\ndataset: ${made.files} files, ${(made.bytes / 1e6).toFixed(0)} MB (scripts/make-dataset.mjs) in ${IN}`);
    const cli = (...args: string[]) => () => execFileSync(process.execPath, [BIN, 'normalize', IN, '--out-dir', OUT, '--quiet', ...args]);
    const steps: [string, () => unknown][] = [
      ['cp -r', () => execFileSync('cp', ['-r', IN, OUT])],
      ['cp -r + sync', () => {
        execFileSync('cp', ['-r', IN, OUT]);
        execFileSync('sync');
      }],
      ['no fsync', cli('--no-fsync')],
      ['default', cli()],
      ['checksum', cli('--no-fsync', '--checksum')],
    ];
    const times = new Map<string, number[]>(steps.map(([k]) => [k, []]));
    for (let r = 0; r < ROUNDS; r++) {
      for (const [k, step] of steps) {
        rmSync(OUT, { recursive: true, force: true });
        freshStart(made.bytes);
        const t = performance.now();
        step();
        times.get(k)!.push(secs(t));
      }
      console.log(`round ${r + 1}: ${steps.map(([k]) => `${k} ${times.get(k)![r]!.toFixed(2)} s`).join(', ')}`);
    }
    const med = Object.fromEntries([...times].map(([k, v]) => [k, median(v)]));
    const line = (what: string, k: string) => console.log(`${what.padEnd(52)} ${med[k]!.toFixed(2).padStart(6)} s  ${(made.bytes / med[k]! / 1e9).toFixed(2).padStart(6)} GB/s`);
    console.log('medians (whole processes):');
    line('cp -r', 'cp -r');
    line('cp -r, then sync', 'cp -r + sync');
    line('rmsnorm-wasm normalize --out-dir, --no-fsync', 'no fsync');
    line('rmsnorm-wasm normalize --out-dir (each output flushed)', 'default');
    line('the same, --no-fsync --checksum', 'checksum');

    // Rows of sampled .npy outputs against float64 (the last run was --checksum, no fsync).
    const npys = (readdirSync(join(IN, 'npy'), { recursive: true, encoding: 'utf8' }) as string[]).filter((f) => f.endsWith('.npy'));
    for (const rel of npys.filter((_, i) => i % 7 === 0)) {
      const row = (path: string) => {
        const b = readFileSync(path);
        const h = parseNpyHeader(new Uint8Array(b), b.length, path);
        const dim = h.shape[h.shape.length - 1]!;
        const at = b.byteOffset + h.dataOffset;
        const v = h.dtype === 'float32' ? new Float32Array(b.buffer.slice(at, at + 4 * dim)) : halfToFloat32(new Uint16Array(b.buffer.slice(at, at + 2 * dim)), 'float16');
        return { v, half: h.dtype === 'float16', dim };
      };
      const x = row(join(IN, 'npy', rel));
      const y = row(join(OUT, 'npy', rel));
      const ref = refForward(x.v, null, x.dim, 1e-6).y;
      // A float16 output is rounded once more than the float32 reference.
      const bad = x.half ? mismatch(y.v, ref, (_i: number, r: number) => 1e-3 + 1e-3 * Math.abs(r), rel) : mismatch(y.v, ref, yTolerance, rel);
      if (bad) throw new Error(`sampled rows: ${bad}`);
    }
    const perFile = perFileCost(root, ROUNDS);
    console.log(
      `per-file cost (${PER_FILE_COUNT} one-row files against one, whole processes): ${perFile.noFsync.toFixed(3)} ms a file with --no-fsync, ` +
        `${perFile.default.toFixed(3)} ms with each output flushed`,
    );
    const result = {
      date: new Date().toISOString(),
      cpu: os.cpus()[0]?.model ?? '',
      cores: os.availableParallelism(),
      node: process.version,
      files: made.files,
      bytes: made.bytes,
      normalizedBytes: made.normalizedBytes,
      rounds: ROUNDS,
      seconds: med,
      runs: Object.fromEntries(times),
      ratios: { vsCpR: med['cp -r']! / med['no fsync']!, fsyncVsCpRSync: med['cp -r + sync']! / med.default!, checksumCost: med.checksum! / med['no fsync']! },
      perFileMs: perFile,
      perFileCount: PER_FILE_COUNT,
    };
    console.log(
      `rmsnorm-wasm on the dataset: ${result.ratios.vsCpR.toFixed(2)}× cp -r; with fsync ${result.ratios.fsyncVsCpRSync.toFixed(2)}× cp -r + sync; ` +
        `--checksum takes ${result.ratios.checksumCost.toFixed(2)}× the time`,
    );
    writeFileSync(new URL('./results/dataset.json', import.meta.url), JSON.stringify(result, null, 2) + '\n');
    return result;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await benchDataset();
