/**
 * `npm run bench:browser`: the demo page's benchmark, run headless in Debian's Chromium, written
 * in the JSON format of `npm run bench` (bench/run.ts) to bench/results/browser.json, with the
 * same derived columns, comparisons and summary (computed by bench/report.ts) and a chart
 * (bench/svg.ts) in browser.svg; then half precision against float32 on every SIMD build the
 * browser runs (demo/half-pairs.js), in the format of `npm run bench:half`, to
 * bench/results/half-browser.json.
 *
 * Usage: tsx demo/bench-browser.ts [--shapes 64x4096,1x896] [--quick] [--out DIR]
 *                                  [--budget MS] [--no-isolation]
 *   --shapes        ROWSxDIM list (default: bench/defaults.ts, as `npm run bench`)
 *   --quick         bench's quick shapes and a 20 ms budget; writes to bench/results/quick
 *   --out           directory for browser.json and browser.svg (default bench/results)
 *   --budget        sampling time per contender and shape, ms (default 500)
 *   --no-isolation  serve without COOP/COEP: the pool runs in single mode
 *   --half-shapes   ROWSxDIM list of the half-precision pairs (default 4096x4096,1024x5120,64x4096)
 *
 * Tables go to stdout, progress to stderr.
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseShapes, shapeName } from '../bench/data.js';
import { DEFAULT_SHAPES, QUICK_SHAPES } from '../bench/defaults.js';
import { BENCHMARKS_MD, writeBenchmarks } from '../bench/docs.js';
import { comparisons, derive, layerNormSavings, progressLine, shapeTable, summary } from '../bench/report.js';
import { renderSvg } from '../bench/svg.js';
import type { Row, Shape } from '../bench/types.js';
import { buildNormModel, RMS_NORMALIZATION } from '../bench/onnx-model.js';
import { makeCase } from '../shared/reference.js';
import { launchChromium, openPage } from './chromium.js';
import { startDemoServer } from './server.js';

const RESULTS = fileURLToPath(new URL('../bench/results/', import.meta.url));

const { values: args } = parseArgs({
  options: {
    shapes: { type: 'string' },
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
    budget: { type: 'string' },
    'no-isolation': { type: 'boolean', default: false },
    'half-shapes': { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write('tsx demo/bench-browser.ts [--shapes 64x4096,1x896] [--quick] [--out DIR] [--budget MS] [--no-isolation] [--half-shapes 4096x4096]\n');
  process.exit(0);
}
const quick = args.quick!;
const shapes: Shape[] = args.shapes ? parseShapes(args.shapes) : [...(quick ? QUICK_SHAPES : DEFAULT_SHAPES)];
const budgetMs = Number(args.budget ?? (quick ? 20 : 500));
if (!(budgetMs > 0)) throw new RangeError(`--budget must be a positive number of ms, got ${args.budget}`);
const outDir = resolve(args.out ?? (quick ? join(RESULTS, 'quick') : RESULTS));
const isolated = !args['no-isolation'];
const halfShapes = args['half-shapes'] ? parseShapes(args['half-shapes']).map(shapeName) : quick ? ['8x256'] : ['4096x4096', '1024x5120', '64x4096'];
const log = (s: string) => process.stderr.write(s + '\n');
const started = Date.now();

/** What the page reports about itself (demo/app.js `env`). */
interface PageEnv {
  crossOriginIsolated: boolean;
  build: string;
  poolMode: string;
  poolThreads: number;
  simd: boolean;
  cores: number;
  userAgent: string;
  clockResolutionMs: number;
}

const server = await startDemoServer({ isolated });
const browser = await launchChromium();
const chromiumVersion = browser.version();
let rows: Row[];
let env: PageEnv;
let half: { builds: string[]; rows: { shape: string; pair: string; ratio: number }[] };
try {
  const { page, errors } = await openPage(browser);
  await page.exposeFunction('__benchProgress', (row: Row) => log(progressLine(row)));
  await page.goto(`${server.url}demo/`);
  env = (await page.evaluate(() => (globalThis as unknown as { rmsnormDemo: { ready: Promise<unknown> } }).rmsnormDemo.ready)) as PageEnv;
  log(`Chromium ${chromiumVersion}: crossOriginIsolated=${env.crossOriginIsolated}, init() build ${env.build}, pool ${env.poolMode} × ${env.poolThreads}`);
  // A string, not a function: tsx would wrap an arrow function in helpers the page lacks.
  const cfg = { shapes: shapes.map(shapeName), ops: ['copy', 'forward', 'backward', 'layernorm'], budgetMs };
  rows = (await page.evaluate(
    `globalThis.rmsnormDemo.run({ ...${JSON.stringify(cfg)}, onRow: (r) => globalThis.__benchProgress(r) })`,
  )) as Row[];
  if (errors.length) log(`page errors:\n${errors.join('\n')}`);
  // onnxruntime-web in the page, one page per thread count (it reads numThreads once). The
  // page asks for each case's model: the same case (shared/reference.js makeCase) and the same
  // hand-encoded RMSNormalization model as the Node benchmark's ort-web rows.
  const threadCounts = [...new Set([1, env.crossOriginIsolated ? env.cores : 1])];
  for (const threads of threadCounts) {
    const { page: p, errors: errs } = await openPage(browser);
    await p.exposeFunction('__benchProgress', (row: Row) => log(progressLine(row)));
    await p.exposeFunction('__ortModel', (r: number, d: number) => {
      const c = makeCase({ rows: r, dim: d });
      return Buffer.from(buildNormModel(r, d, c.w, c.eps, RMS_NORMALIZATION)).toString('base64');
    });
    await p.goto(`${server.url}demo/`);
    await p.evaluate(() => (globalThis as unknown as { rmsnormDemo: { ready: Promise<unknown> } }).rmsnormDemo.ready);
    const ortCfg = { shapes: cfg.shapes, ops: ['forward'], only: ['ort-web'], budgetMs };
    rows.push(
      ...((await p.evaluate(
        `globalThis.rmsnormDemo.run({ ...${JSON.stringify(ortCfg)}, ort: { threads: ${threads}, modelFor: (r, d) => globalThis.__ortModel(r, d) }, onRow: (r) => globalThis.__benchProgress(r) })`,
      )) as Row[]),
    );
    if (errs.length) log(`page errors (onnxruntime-web, ${threads} threads):\n${errs.join('\n')}`);
    await p.close();
  }
  // Half precision, in a page of its own (its arrays are large).
  {
    const { page: p, errors: errs } = await openPage(browser);
    await p.exposeFunction('__halfProgress', (r: { shape: string; pair: string; ratio: number }) => log(`${r.shape} ${r.pair}: ${r.ratio.toFixed(2)}×`));
    await p.goto(`${server.url}demo/`);
    await p.evaluate(() => (globalThis as unknown as { rmsnormDemo: { ready: Promise<unknown> } }).rmsnormDemo.ready);
    const halfCfg = { shapes: halfShapes, rounds: quick ? 1 : 5, budgetMs: quick ? 20 : 200, minBatchMs: Math.max(1, 200 * env.clockResolutionMs) };
    half = (await p.evaluate(
      `globalThis.rmsnormDemo.halfPairs({ ...${JSON.stringify(halfCfg)}, onRow: (r) => globalThis.__halfProgress(r) })`,
    )) as typeof half;
    if (errs.length) log(`page errors (half precision):\n${errs.join('\n')}`);
    await p.close();
  }
} finally {
  await browser.close();
  await server.close();
}

// JSON turned the page's Infinity (failed checks) into null: put it back for the report.
for (const r of rows) {
  if (r.check.maxAbsErr === null) r.check.maxAbsErr = Infinity;
  if (r.check.worstToTolerance === null) r.check.worstToTolerance = Infinity;
}
derive(rows);
const shapeNames = shapes.map(shapeName);
const cs = comparisons(rows, shapes);
const ln = layerNormSavings(rows, shapes);
const notes = [
  `Chromium ${chromiumVersion} (headless), page ${env.crossOriginIsolated ? 'cross-origin isolated' : 'not cross-origin isolated'}; pool in ${env.poolMode} mode with ${env.poolThreads} worker(s) (navigator.hardwareConcurrency = ${env.cores}).`,
  `Timing: batched calls timed with performance.now() (resolution ${(env.clockResolutionMs * 1000).toPrecision(3)} µs), batches ≥ ${Math.max(1, 200 * env.clockResolutionMs)} ms, per-call time = batch ÷ calls, ${budgetMs} ms of samples per row (at least 5).`,
  'onnxruntime-web 1.30 runs in the page (its wasm EP, one RMSNormalization node, opset 23), in a page of its own per thread count; only session.run() on a tensor made once is timed, which includes its copies of X in and Y out.',
  'js-optimized, onnxruntime-node and pool sizes other than the core count are only in the Node benchmark (npm run bench).',
];

const cpu = os.cpus()[0]?.model?.trim() ?? 'unknown';
const machine = {
  cpu,
  cores: os.availableParallelism(),
  memoryGB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
  platform: `${os.platform()} ${os.release()} ${os.arch()}`,
};
const date = new Date().toISOString();
for (const s of shapeNames) {
  process.stdout.write(`\n== ${s}  (median of batched samples; ±rme = 95% margin of error of the mean)\n`);
  process.stdout.write(shapeTable(rows, s) + '\n');
}
const text = summary(rows, cs, ln, notes);
process.stdout.write(`\nSummary: ${text}\n`);

const minBatchMs = Math.max(1, 200 * env.clockResolutionMs);
const json = {
  machine,
  node: process.versions.node,
  // The page's V8 is Chromium's; its version is not visible to a page, the browser's is below.
  v8: null,
  browser: {
    name: 'chromium',
    version: chromiumVersion,
    userAgent: env.userAgent,
    crossOriginIsolated: env.crossOriginIsolated,
    initBuild: env.build,
    poolMode: env.poolMode,
    poolThreads: env.poolThreads,
    hardwareConcurrency: env.cores,
    clockResolutionMs: env.clockResolutionMs,
  },
  date,
  quick,
  shapes: shapeNames,
  durationS: Math.round((Date.now() - started) / 1000),
  tolerance: { atol: 1e-4, rtol: 1e-4, reference: 'float64, same inputs, computed in the page' },
  bytesPerElem: { forward: 8, backward: 12, copy: 8, layernorm: 8 },
  timing: Object.fromEntries(shapeNames.map((s) => [s, { budgetMs, minBatchMs, method: 'batched performance.now()' }])),
  notes,
  comparisons: cs,
  layerNormSavings: ln,
  summary: text,
  rows,
};
mkdirSync(outDir, { recursive: true });
const replacer = (_k: string, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v);
writeFileSync(join(outDir, 'browser.json'), JSON.stringify(json, replacer, 1) + '\n');
writeFileSync(
  join(outDir, 'browser.svg'),
  renderSvg(rows, shapeNames, 'rmsnorm-wasm in Chromium: RMSNorm float32 throughput', `${cpu}, ${machine.cores} cores, Chromium ${chromiumVersion} (${env.crossOriginIsolated ? 'cross-origin isolated' : 'not isolated'}), ${date.slice(0, 10)}`),
);
log(`wrote ${join(outDir, 'browser.json')} and browser.svg (${json.durationS} s)`);
process.stdout.write(`\nHalf precision (zero-copy; ratio = baseline time ÷ the other's, median of rounds), builds ${half.builds.join(', ')}:\n`);
for (const r of half.rows) process.stdout.write(`  ${r.shape.padEnd(10)} ${r.pair.padEnd(52)} ${r.ratio.toFixed(2)}\n`);
writeFileSync(
  join(outDir, 'half-browser.json'),
  JSON.stringify({ date, browser: { name: 'chromium', version: chromiumVersion, crossOriginIsolated: env.crossOriginIsolated }, builds: half.builds, rows: half.rows }, null, 2) + '\n',
);
log(`wrote ${join(outDir, 'half-browser.json')}`);
if (outDir === resolve(RESULTS)) {
  writeBenchmarks();
  log(`wrote ${BENCHMARKS_MD}`);
}
