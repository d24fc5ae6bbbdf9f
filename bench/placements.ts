/**
 * Where the arrays sit: the zero-copy float32 forward and backward (`rmsNorm(x, w, { out })`,
 * `rmsNormBackward(dy, x, w, { dx, dweight })` on views of wasm memory) and the hand-written
 * two-pass kernels (bench/roofs/roofs.wat) at 16 placements of one operand against the others:
 * `(y − x) mod 256` bytes in 16-byte steps for the forward, `dx − x` and `dy − x` for the
 * backward, every other operand at a 4 KiB boundary. Arrays whose addresses differ by a few
 * bytes modulo 4 KiB can slow a loop down (a load checked against an earlier store by its
 * low address bits), so one placement says little about what a user's buffers get.
 *
 * Per shape and sweep, every placement of every contender is timed in each round (batches of
 * calls, the placements and contenders in turn, so that all see the same machine load); a
 * placement's figure is its median over the rounds. Reported: the package's median over the
 * placements ÷ the roof's, and each one's worst placement ÷ its best.
 *
 * Run: `npm run bench:placements` (env SHAPES, default the benchmark's; ROUNDS, default 7;
 * BASELINE, the folder of another checkout built with `npm run build`, to time its package at
 * the same placements: the per-placement ratio this ÷ that). Writes
 * bench/results/placements.json and the page docs/benchmarks.md.
 * @module
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_SHAPES } from './defaults.js';
import { writeBenchmarks } from './docs.js';
import { parseShapes, shapeName } from './data.js';
import { roofs } from './roofs.js';
import type { Shape } from './types.js';

type Api = typeof import('../dist/index.js');

/** The placements: byte offsets of the swept operand modulo 256. */
const OFFSETS = Array.from({ length: 16 }, (_, i) => 16 * i);
/** What each sweep moves. */
const SWEEPS = [
  { op: 'forward', moved: 'y' },
  { op: 'backward', moved: 'dx' },
  { op: 'backward', moved: 'dy' },
] as const;
type Sweep = (typeof SWEEPS)[number];

const ROUNDS = Number(process.env.ROUNDS ?? 7);
const WARM = 2;
const shapes: Shape[] = process.env.SHAPES ? parseShapes(process.env.SHAPES) : [...DEFAULT_SHAPES];
const EPS = 1e-6;

/** The operands of one call, by name, as element offsets into a float32 memory. */
type Layout = Record<'x' | 'w' | 'y' | 'dy' | 'dx' | 'dw', number>;

/**
 * Element offsets of the operands in an arena starting at float `base`: each operand in a region
 * of its own that starts on a 4 KiB boundary, the swept one `off` bytes past it.
 */
function layout(base: number, rows: number, dim: number, moved: string, off: number): { at: Layout; floats: number } {
  const n = rows * dim;
  const page = 1024; // floats in 4 KiB
  const region = (len: number) => Math.ceil((len + 64) / page) * page + page;
  let top = Math.ceil(base / page) * page;
  const at = {} as Layout;
  for (const [name, len] of [['x', n], ['w', dim], ['y', n], ['dy', n], ['dx', n], ['dw', dim]] as const) {
    at[name] = top + (name === moved ? off / 4 : 0);
    top += region(len);
  }
  return { at, floats: top - base };
}

/** Arena floats one shape needs (every placement fits it). */
const arenaFloats = (rows: number, dim: number) => layout(0, rows, dim, 'x', 0).floats + 2048;

let seed = 7;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;

/** Fills the inputs at `at` in `f32` (the same values for every contender). */
function fill(f32: Float32Array, at: Layout, rows: number, dim: number): void {
  seed = 7;
  const n = rows * dim;
  for (let i = 0; i < n; i++) {
    f32[at.x + i] = rand();
    f32[at.dy + i] = rand();
  }
  for (let i = 0; i < dim; i++) f32[at.w + i] = 1 + rand() / 2;
}

/** A contender: one call at a placement (made once per shape and placement). */
type Make = (sweep: Sweep, off: number) => () => unknown;

/** The package's zero-copy calls on one arena of `api`'s default instance (freed by `done`). */
function packageCalls(api: Api, rows: number, dim: number, done: (() => void)[]): Make {
  const arena = api.allocF32(arenaFloats(rows, dim));
  done.push(() => arena.free());
  return (sweep, off) => {
    const all = arena.view();
    const base = all.byteOffset / 4;
    const { at } = layout(base, rows, dim, sweep.moved, off);
    const mem = new Float32Array(all.buffer);
    fill(mem, at, rows, dim);
    const v = (k: keyof Layout, len: number) => mem.subarray(at[k], at[k] + len);
    const n = rows * dim;
    const [x, w, y, dy, dx, dw] = [v('x', n), v('w', dim), v('y', n), v('dy', n), v('dx', n), v('dw', dim)];
    if (sweep.op === 'forward') {
      const o = { out: y, eps: EPS };
      return () => api.rmsNorm(x, w, o);
    }
    const o = { dx, dweight: dw, eps: EPS };
    return () => api.rmsNormBackward(dy, x, w, o);
  };
}

/** The hand-written kernels at the same placements, on the roofs' memory. */
async function roofCalls(rows: number, dim: number): Promise<Make> {
  const r = await roofs();
  r.reset();
  const start = r.alloc(4 * arenaFloats(rows, dim)) / 4;
  const work = r.alloc(12 * dim);
  return (sweep, off) => {
    const { at } = layout(start, rows, dim, sweep.moved, off);
    fill(new Float32Array(r.k.memory.buffer), at, rows, dim);
    const b = (k: keyof Layout) => 4 * at[k];
    if (sweep.op === 'forward') return () => r.k.fwd_f32(b('x'), b('w'), b('y'), rows, dim, EPS);
    return () => r.k.bwd_f32(b('dy'), b('x'), b('w'), b('dx'), b('dw'), work, rows, dim, EPS);
  };
}

const median = (a: number[]) => {
  const s = [...a].sort((u, v) => u - v);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** One sweep's result at one shape: GB/s per placement, per contender. */
export interface PlacementRow {
  op: 'forward' | 'backward';
  /** The operand moved: `y` (forward), `dx` or `dy` (backward). */
  moved: string;
  shape: string;
  /** GB/s at each of {@link OFFSETS}, by contender: `package`, `roof`, and `baseline` when timed. */
  gbPerS: Record<string, number[]>;
  /** The package's median over the placements ÷ the roof's. */
  medianVsRoof: number;
  /** Worst placement ÷ best, per contender. */
  worstOverBest: Record<string, number>;
  /** With a baseline: the per-placement ratios package ÷ baseline (each a median over rounds): their median and smallest. */
  medianVsBaseline?: number;
  minVsBaseline?: number;
}

const api = (await import('../dist/index.js')) as Api;
await api.init({ build: 'simd' });
const baseDir = process.env.BASELINE;
const base = baseDir ? ((await import(pathToFileURL(resolve(baseDir, 'dist/index.js')).href)) as Api) : null;
if (base) await base.init({ build: 'simd' });

console.log(`placements: ${os.cpus()[0]?.model}, ${os.availableParallelism()} cores, Node ${process.version}; ${ROUNDS} rounds${baseDir ? `; baseline ${baseDir}` : ''}`);
const rows: PlacementRow[] = [];
for (const s of shapes) {
  const n = s.rows * s.dim;
  const done: (() => void)[] = [];
  const makers: [string, Make][] = [['package', packageCalls(api, s.rows, s.dim, done)], ['roof', await roofCalls(s.rows, s.dim)]];
  if (base) makers.push(['baseline', packageCalls(base, s.rows, s.dim, done)]);
  for (const sweep of SWEEPS) {
    const bytes = (sweep.op === 'forward' ? 2 : 3) * 4 * n;
    // Calls per timed batch: about 20 MB moved, at least 3 calls.
    const reps = Math.max(3, Math.ceil(2e7 / bytes));
    const calls = makers.map(([name, make]) => [name, OFFSETS.map((off) => make(sweep, off))] as const);
    const times = new Map(calls.map(([name]) => [name, OFFSETS.map(() => [] as number[])]));
    for (let round = 0; round < WARM + ROUNDS; round++) {
      for (let p = 0; p < OFFSETS.length; p++) {
        for (const [name, fns] of calls) {
          const f = fns[p]!;
          const t0 = performance.now();
          for (let i = 0; i < reps; i++) f();
          const ms = (performance.now() - t0) / reps;
          if (round >= WARM) times.get(name)![p]!.push(ms);
        }
      }
    }
    const gbPerS = Object.fromEntries([...times].map(([name, ts]) => [name, ts.map((t) => bytes / median(t) / 1e6)]));
    const wb = Object.fromEntries(Object.entries(gbPerS).map(([name, g]) => [name, Math.min(...g) / Math.max(...g)]));
    const row: PlacementRow = {
      op: sweep.op, moved: sweep.moved, shape: shapeName(s), gbPerS,
      medianVsRoof: median(gbPerS.package!) / median(gbPerS.roof!),
      worstOverBest: wb,
    };
    if (gbPerS.baseline) {
      const vs = gbPerS.package!.map((g, i) => g / gbPerS.baseline![i]!);
      row.medianVsBaseline = median(vs);
      row.minVsBaseline = Math.min(...vs);
    }
    rows.push(row);
    const f = (v: number) => v.toFixed(2);
    console.log(
      `${sweep.op.padEnd(8)} ${(sweep.moved + ' moved').padEnd(9)} ${row.shape.padEnd(10)} package ${median(gbPerS.package!).toFixed(1)} GB/s, roof ${median(gbPerS.roof!).toFixed(1)}: ` +
        `${f(row.medianVsRoof)}x roof; worst/best package ${f(wb.package!)}, roof ${f(wb.roof!)}` +
        (row.minVsBaseline !== undefined ? `; vs baseline median ${f(row.medianVsBaseline!)}, min ${f(row.minVsBaseline)}` : ''),
    );
  }
  for (const d of done) d();
}

const out = {
  date: new Date().toISOString(),
  cpu: os.cpus()[0]?.model?.trim() ?? '',
  cores: os.availableParallelism(),
  node: process.version,
  build: api.instance()?.build ?? 'simd',
  rounds: ROUNDS,
  offsets: OFFSETS,
  rows,
};
writeFileSync(new URL('./results/placements.json', import.meta.url), JSON.stringify(out, null, 2) + '\n');
writeBenchmarks();
