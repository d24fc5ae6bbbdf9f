/**
 * How steady the one-off default call is from one Node process to the next. Runs several fresh
 * processes (default 6) one after another; each measures, per shape (default 64×4096 and
 * 512×4096, float32), in interleaved rounds, the median µs per call of:
 *
 *   default   `rmsNorm(x, w)`: the library allocates the result
 *   out       `rmsNorm(x, w, { out })`: the same call writing into one array, reused
 *   pool      `await pool.rmsNorm(x, w)` on a pool from `createPool()`
 *
 * and, for the default call, minor page faults per call (`process.resourceUsage`) and garbage
 * collections per 1000 calls (`PerformanceObserver('gc')`). The ratios default / out and
 * pool / default are printed per process, and everything is written to
 * `bench/results/steady.json`.
 *
 * Usage: `npm run bench:steady [-- --processes 6 --rows 64,512 --dim 4096 --ms 300]`
 * @module
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { PerformanceObserver } from 'node:perf_hooks';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const { values: args } = parseArgs({
  options: {
    child: { type: 'boolean', default: false },
    processes: { type: 'string', default: '6' },
    rows: { type: 'string', default: '64,512' },
    dim: { type: 'string', default: '4096' },
    ms: { type: 'string', default: '300' },
  },
});

interface ShapeResult {
  rows: number;
  dim: number;
  defaultUs: number;
  outUs: number;
  poolUs: number;
  faultsPerCall: number;
  gcPer1000: number;
}

/** Median µs per call of `f`, calling it for about `ms` milliseconds. */
async function timed(f: () => unknown, ms: number): Promise<number[]> {
  const times: number[] = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const t = performance.now();
    const r = f();
    if (r instanceof Promise) await r;
    times.push((performance.now() - t) * 1000);
  }
  return times;
}

const median = (a: number[]): number => {
  const s = [...a].sort((p, q) => p - q);
  return s[Math.floor(s.length / 2)]!;
};

async function child(): Promise<void> {
  const { createPool, init, rmsNorm } = await import('../dist/index.js');
  await init();
  const pool = await createPool();
  const ms = Number(args.ms);
  const dim = Number(args.dim);
  let gcs = 0;
  const obs = new PerformanceObserver((l) => (gcs += l.getEntries().length));
  obs.observe({ entryTypes: ['gc'] });
  const results: ShapeResult[] = [];
  for (const rows of args.rows!.split(',').map(Number)) {
    const n = rows * dim;
    const x = Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.7) * 2);
    const w = Float32Array.from({ length: dim }, (_, i) => 1 + Math.cos(i) / 4);
    const out = new Float32Array(n);
    let sink: unknown;
    const cases = {
      default: () => (sink = rmsNorm(x, w)),
      out: () => rmsNorm(x, w, { out }),
      pool: () => pool.rmsNorm(x, w).then((y) => (sink = y)),
    };
    for (const f of Object.values(cases)) await timed(f, ms / 3); // warm-up
    const all: Record<string, number[]> = { default: [], out: [], pool: [] };
    let faults = 0;
    let defaultCalls = 0;
    let defaultGcs = 0;
    for (let round = 0; round < 2; round++) {
      for (const [name, f] of Object.entries(cases)) {
        const f0 = process.resourceUsage().minorPageFault;
        const g0 = gcs;
        const t = await timed(f, ms / 2);
        // Let the observer's callback for this round's collections run before reading the count.
        await new Promise((r) => setTimeout(r, 0));
        all[name]!.push(...t);
        if (name === 'default') {
          faults += process.resourceUsage().minorPageFault - f0;
          defaultGcs += gcs - g0;
          defaultCalls += t.length;
        }
      }
    }
    void sink;
    results.push({
      rows,
      dim,
      defaultUs: median(all.default!),
      outUs: median(all.out!),
      poolUs: median(all.pool!),
      faultsPerCall: faults / defaultCalls,
      gcPer1000: (1000 * defaultGcs) / defaultCalls,
    });
  }
  obs.disconnect();
  await pool.destroy();
  process.stdout.write(JSON.stringify(results) + '\n');
}

async function main(): Promise<void> {
  const procs = Number(args.processes);
  const runs: ShapeResult[][] = [];
  const childArgs = ['--rows', args.rows!, '--dim', args.dim!, '--ms', args.ms!];
  console.log('process  shape        default µs   out µs   pool µs   default/out   pool/default   faults/call   GCs/1000 calls');
  for (let p = 0; p < procs; p++) {
    const r = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', ...childArgs], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`bench:steady: process ${p + 1} failed:\n${r.stderr}`);
    const res = JSON.parse(r.stdout.trim().split('\n').pop()!) as ShapeResult[];
    runs.push(res);
    for (const s of res) {
      const f = (v: number, d = 1) => v.toFixed(d).padStart(9);
      console.log(
        `${String(p + 1).padStart(7)}  ${`${s.rows}×${s.dim}`.padEnd(10)} ${f(s.defaultUs)}  ${f(s.outUs)}  ${f(s.poolUs)}  ${f(s.defaultUs / s.outUs, 2)}     ${f(s.poolUs / s.defaultUs, 2)}      ${f(s.faultsPerCall)}     ${f(s.gcPer1000)}`,
      );
    }
  }
  const dir = join(HERE, 'results');
  mkdirSync(dir, { recursive: true });
  const machine = { cpu: os.cpus()[0]?.model ?? 'unknown', cores: os.cpus().length, node: process.version, platform: `${os.platform()} ${os.arch()}` };
  writeFileSync(join(dir, 'steady.json'), JSON.stringify({ machine, date: new Date().toISOString(), processes: runs }, null, 2) + '\n');
  console.log(`\nwritten: ${join(dir, 'steady.json')}`);
}

await (args.child ? child() : main());
