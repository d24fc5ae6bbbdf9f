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

/** The per-file cost's datasets: one-row files, a few and many (the cost of one more is between them, once the code is warm). */
const PER_FILE = { few: 2000, many: 20000 } as const;

/** What one more file costs, in ms (see {@link perFileCost}). */
export interface PerFileMs {
  /** `--no-fsync`: from PER_FILE.few files to PER_FILE.many, over the files added. */
  noFsync: number;
  /** `--no-fsync`, PER_FILE.few files against one: the first files, with the code still warming up. */
  firstFiles: number;
  /** Each output flushed: PER_FILE.few files against one. */
  default: number;
  /** `cp -r` of PER_FILE.many files, per file, in the same rounds. */
  cpR: number;
}

/**
 * What one more file costs a dataset run, in ms: the command over `.npy` files of one row of 64
 * float32 (whole processes, medians of `rounds`), the difference between two counts over the
 * files added — its listing, header, temporary file, rename and manifest line, the
 * normalization of a row being nothing. Every run writes a folder of its own, all removed at
 * the end: a file system that has just freed many inodes (ext4) makes the next creations slower
 * for a while, and would charge one run for the last one's removal.
 */
function perFileCost(root: string, rounds: number): PerFileMs {
  const row = Buffer.concat([npyHeader([1, 64]), Buffer.from(new Float32Array(64).fill(1).buffer)]);
  const dirs = { one: join(root, 'one'), few: join(root, 'few'), many: join(root, 'many') };
  for (const [k, d] of Object.entries(dirs)) {
    mkdirSync(d, { recursive: true });
    for (let i = 0; i < (k === 'one' ? 1 : PER_FILE[k as keyof typeof PER_FILE]); i++) writeFileSync(join(d, `f${String(i).padStart(5, '0')}.npy`), row);
  }
  let n = 0;
  const fresh = () => join(root, `per-file-out-${n++}`);
  const time = (cmd: string, args: string[]) => {
    const t = performance.now();
    execFileSync(cmd, args);
    return secs(t);
  };
  const cli = (dir: string, flags: string[]) => () => time(process.execPath, [BIN, 'normalize', dir, '--out-dir', fresh(), '--quiet', ...flags]);
  const steps = {
    one: cli(dirs.one, ['--no-fsync']), few: cli(dirs.few, ['--no-fsync']), many: cli(dirs.many, ['--no-fsync']),
    oneSynced: cli(dirs.one, []), fewSynced: cli(dirs.few, []), cp: () => time('cp', ['-r', dirs.many, fresh()]),
  };
  const runs = Object.fromEntries(Object.keys(steps).map((k) => [k, [] as number[]])) as Record<keyof typeof steps, number[]>;
  for (let r = 0; r < rounds; r++) for (const [k, step] of Object.entries(steps)) runs[k as keyof typeof steps].push(step());
  const m = Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, median(v)])) as Record<keyof typeof steps, number>;
  const ms = (a: number, b: number, files: number) => ((b - a) * 1000) / files;
  return {
    noFsync: ms(m.few, m.many, PER_FILE.many - PER_FILE.few),
    firstFiles: ms(m.one, m.few, PER_FILE.few - 1),
    default: ms(m.oneSynced, m.fewSynced, PER_FILE.few - 1),
    cpR: ms(0, m.cp, PER_FILE.many),
  };
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
        // Removed, unlike perFileCost's outputs: a few hundred files, whose pages the next run reuses.
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
      `per-file cost (one-row files, whole processes): ${perFile.noFsync.toFixed(3)} ms a file with --no-fsync from ${PER_FILE.few} files to ${PER_FILE.many} ` +
        `(cp -r: ${perFile.cpR.toFixed(3)} ms); the first ${PER_FILE.few}: ${perFile.firstFiles.toFixed(3)} ms each; ${perFile.default.toFixed(3)} ms with each output flushed`,
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
      perFileCounts: PER_FILE,
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
