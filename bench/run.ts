/**
 * `npm run bench`: RMSNorm forward and backward (float32) for every contender on every shape,
 * each checked against a float64 reference and then timed with tinybench.
 *
 * Then the cold start of a program (bench/cold-start.ts): fresh processes timing `import`,
 * `init()` and a first call, against onnxruntime's import, session and first run.
 *
 * Usage: tsx bench/run.ts [--shapes 64x4096,1x896] [--quick] [--out DIR] [--no-ort] [--baseline DIR]
 *   --shapes  ROWSxDIM list (default: bench/defaults.ts)
 *   --quick   tiny shapes, a few iterations each (for tests); writes to bench/results/quick
 *             unless --out says otherwise, never over the committed results
 *   --out     directory for latest.json and latest.svg (default bench/results)
 *   --no-ort  skip the onnxruntime child processes
 *   --baseline another checkout of this package, built: its cold start beside this one's
 *
 * Tables go to stdout, progress to stderr.
 * @module
 */
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { copies } from './contenders/copy.js';
import { roofContenders, rtenContenders } from './contenders/roofs.js';
import { jsNaive } from './contenders/js-naive.js';
import { jsOptimized } from './contenders/js-optimized.js';
import { layerNorm } from './contenders/layernorm.js';
import { poolContenders, Pools } from './contenders/pool.js';
import { wasmSync } from './contenders/wasm.js';
import { DEFAULT_SHAPES, QUICK_SHAPES } from './defaults.js';
import { instance } from '../dist/index.js';
import { ATOL, RTOL, caseReference, makeCase } from '../shared/reference.js';
import { parseShapes, shapeName } from './data.js';
import { runOrtChild } from './ort-launch.js';
import { progressLine, shapeTable } from './report.js';
import { writeRun } from './results-json.js';
import { BYTES_PER_ELEM, benchFor, measure, timingFor } from './runner.js';
import { BENCHMARKS_MD, writeBenchmarks } from './docs.js';
import { coldStarts } from './cold-start.js';
import type { Contender, Row, Shape } from './types.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
/** The row length of the cold start's first call: one token of a small model. */
const COLD_DIM = 896;

const { values: args } = parseArgs({
  options: {
    shapes: { type: 'string' },
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
    'no-ort': { type: 'boolean', default: false },
    baseline: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write('tsx bench/run.ts [--shapes 64x4096,1x896] [--quick] [--out DIR] [--no-ort] [--baseline DIR]\n');
  process.exit(0);
}
const quick = args.quick!;
const shapes: Shape[] = args.shapes ? parseShapes(args.shapes) : [...(quick ? QUICK_SHAPES : DEFAULT_SHAPES)];
const outDir = resolve(args.out ?? join(HERE, 'results', quick ? 'quick' : ''));
const cores = os.availableParallelism();
const started = Date.now();
const loadAtStart = os.loadavg();
if (loadAtStart[0]! > 0.5) {
  process.stderr.write(`warning: load average ${loadAtStart[0]!.toFixed(2)} at start: other processes will perturb the timings\n`);
}
const log = (s: string) => process.stderr.write(s + '\n');

// Order within a shape: the copy first (the roof every row is compared with), then forward,
// backward, LayerNorm; onnxruntime afterwards, in child processes.
const pools = new Pools();
const notes: string[] = [];
const byOp = (ks: Contender[], op: string) => ks.filter((k) => k.op === op);
const sync = [...jsNaive(), ...jsOptimized(), ...(await wasmSync()), ...(await roofContenders()), ...(await rtenContenders(notes))];
const pooled = poolContenders(pools, cores);
const contenders: Contender[] = [
  ...(await copies()),
  ...byOp(sync, 'copy'),
  ...byOp(sync, 'forward'),
  ...byOp(pooled, 'forward'),
  ...byOp(sync, 'backward'),
  ...byOp(pooled, 'backward'),
  ...(await layerNorm()),
];
// The builds behind the rows: init()'s (wasm-default, wasm-layer) and the pool's; the wasm-simd
// and wasm-scalar rows name theirs.
const builds = { init: instance()!.build, pool: (await pools.get(1)).build };
log(`builds: init() ${builds.init}, pool ${builds.pool}`);

const rows: Row[] = [];
for (const s of shapes) {
  log(`${shapeName(s)}: ${contenders.length} contenders`);
  const c = makeCase(s);
  const ref = caseReference(c);
  const bench = benchFor(s, timingFor(s, quick));
  for (const k of contenders) {
    const row = await measure(bench, k, c, ref);
    log(progressLine(row));
    rows.push(row);
  }
}
await pools.destroy();

if (!args['no-ort']) {
  const specs = [
    { engine: 'web' as const, threads: 1 },
    ...(cores > 1 ? [{ engine: 'web' as const, threads: cores }] : []),
    { engine: 'node' as const, threads: cores },
  ];
  for (const spec of specs) {
    log(`onnxruntime-${spec.engine}, ${spec.threads} thread(s), in a child process`);
    try {
      rows.push(...(await runOrtChild({ ...spec, shapes, quick })));
    } catch (e) {
      notes.push(`onnxruntime-${spec.engine} (${spec.threads} threads) failed: ${e instanceof Error ? e.message : String(e)}.`);
      log(`  ${notes.at(-1)}`);
    }
  }
} else {
  notes.push('onnxruntime skipped (--no-ort).');
}
notes.push(
  'onnxruntime rows are forward only (it has no RMSNorm backward to call): onnxruntime-web 1.30 (wasm EP) runs one ' +
    'RMSNormalization node (ONNX opset 23, IR v11), onnxruntime-node 1.30 (CPU EP) one SimplifiedLayerNormalization node ' +
    'in the default domain (onnxruntime rejects it in com.microsoft); both execute as one CPU kernel; only session.run() ' +
    'on pre-made tensors is timed, which includes onnxruntime copying X in and Y out.',
);

const coldRounds = quick ? 1 : 7;
log(`cold start: ${coldRounds} round(s) of fresh processes`);
const coldStart = { dim: COLD_DIM, rounds: coldRounds, rows: coldStarts(coldRounds, COLD_DIM, args.baseline) };
for (const c of coldStart.rows) log(`  ${c.name}: ${c.totalMs} ms (import ${c.importMs}, init ${c.initMs}, first call ${c.firstCallMs})`);

const shapeNames = shapes.map(shapeName);
const cpu = os.cpus()[0]?.model?.trim() ?? 'unknown';
const machine = {
  cpu,
  cores,
  memoryGB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
  platform: `${os.platform()} ${os.release()} ${os.arch()}`,
  /** 1/5/15-minute load averages when the run started and ended (other work perturbs timings). */
  loadAvgStart: loadAtStart.map((v) => Math.round(v * 100) / 100),
  loadAvgEnd: os.loadavg().map((v) => Math.round(v * 100) / 100),
};
const date = new Date().toISOString();
mkdirSync(outDir, { recursive: true });
const text = writeRun(
  outDir,
  'latest',
  shapes,
  rows,
  {
    machine,
    node: process.versions.node,
    v8: process.versions.v8,
    reference: 'float64, same inputs',
    date,
    quick,
    durationS: Math.round((Date.now() - started) / 1000),
    timing: Object.fromEntries(shapes.map((s) => [shapeName(s), timingFor(s, quick)])),
    notes,
    extra: { builds, coldStart },
  },
  'rmsnorm-wasm: RMSNorm float32 throughput',
  `${cpu}, ${cores} cores, Node ${process.versions.node} (V8 ${process.versions.v8}), ${date.slice(0, 10)}`,
);

for (const s of shapeNames) {
  process.stdout.write(`\n== ${s}  (builds: init() ${builds.init}, pool ${builds.pool}; median of tinybench samples; ±rme = 95% margin of error of the mean)\n`);
  process.stdout.write(shapeTable(rows, s) + '\n');
}
process.stdout.write(
  `\nBytes model for GB/s: forward ${BYTES_PER_ELEM.forward} B/elem (read x, write y), backward ` +
    `${BYTES_PER_ELEM.backward} B/elem (read dy, x; write dx), copy and layernorm 8 B/elem; gain/bias ignored. ` +
    `%copy = GB/s ÷ the wasm copy's GB/s at that shape; %roof = GB/s ÷ the hand-written kernel's of the same op ` +
    `(bench/roofs/roofs.wat: roof-two-pass, roof-copy). Check: |y − ref64| ≤ ${ATOL} + ${RTOL}·|ref64| for every element.\n`,
);
process.stdout.write(`\nSummary: ${text}\n`);
log(`wrote ${join(outDir, 'latest.json')} and latest.svg`);
// The committed results changed: the page generated from them follows.
if (outDir === resolve(HERE, 'results')) {
  writeBenchmarks();
  log(`wrote ${BENCHMARKS_MD}`);
}
