/**
 * `npm run bench:browser`: the demo page's benchmark, run headless in each browser engine —
 * Chromium, Firefox and WebKit (Safari's engine), Debian's own builds (demo/engines.ts) — and
 * written per engine in the JSON format of `npm run bench` (bench/run.ts) to
 * bench/results/browser-ENGINE.json, with the same derived columns, comparisons and summary
 * (computed by bench/report.ts) and a chart (bench/svg.ts) in browser-ENGINE.svg; then, per
 * engine, half precision against float32 on every SIMD build it runs (demo/half-pairs.js) to
 * half-browser-ENGINE.json, and what the one-off call costs and where its time goes
 * (demo/one-off.js) to one-off-browser.json; last, the page's time to its first result, cold
 * (demo/cold-start/: a new page per load, nothing cached), this package against
 * onnxruntime-web, into browser-ENGINE.json. docs/benchmarks.md is regenerated from them.
 *
 * Usage: tsx demo/bench-browser.ts [--engines chromium,firefox,webkit] [--shapes 64x4096,1x896]
 *                                  [--quick] [--out DIR] [--budget MS] [--no-isolation] [--baseline DIR]
 *   --engines       which engines (default: all three; WebKit where it is installed)
 *   --shapes        ROWSxDIM list (default: bench/defaults.ts, as `npm run bench`)
 *   --quick         bench's quick shapes and a 20 ms budget; writes to bench/results/quick
 *   --out           directory for the results (default bench/results)
 *   --budget        sampling time per contender and shape, ms (default 500)
 *   --no-isolation  serve without COOP/COEP: the pool runs in single mode
 *   --half-shapes   ROWSxDIM list of the half-precision pairs (default 4096x4096,1024x5120,64x4096)
 *   --one-off-shapes ROWSxDIM list of the one-off breakdown (default 1x896,1x2048,8x1024,64x4096,256x4096,1024x5120)
 *   --baseline      another checkout of this package, built: its pages' cold start beside this one's
 *
 * Tables go to stdout, progress to stderr.
 * @module
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { extname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseShapes, shapeName } from '../bench/data.js';
import { DEFAULT_SHAPES, QUICK_SHAPES } from '../bench/defaults.js';
import { BENCHMARKS_MD, writeBenchmarks } from '../bench/docs.js';
import { shapeTable } from '../bench/report.js';
import { writeRun } from '../bench/results-json.js';
import type { Row, Shape } from '../bench/types.js';
import { buildNormModel, RMS_NORMALIZATION } from '../bench/onnx-model.js';
import { makeCase } from '../shared/reference.js';
import { mainEntry } from '../bench/cold-start.js';
import { MIME } from './static-server.js';
import { ENGINES, launchEngine, waitFor, type Engine, type EngineName, type EnginePage } from './engines.js';
import { startDemoServer } from './server.js';
import { webkitInstalled } from './webkit.js';

const RESULTS = fileURLToPath(new URL('../bench/results/', import.meta.url));

const { values: args } = parseArgs({
  options: {
    engines: { type: 'string' },
    shapes: { type: 'string' },
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
    budget: { type: 'string' },
    'no-isolation': { type: 'boolean', default: false },
    'half-shapes': { type: 'string' },
    'one-off-shapes': { type: 'string' },
    baseline: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write('tsx demo/bench-browser.ts [--engines chromium,firefox,webkit] [--shapes 64x4096,1x896] [--quick] [--out DIR] [--budget MS] [--no-isolation] [--half-shapes 4096x4096] [--one-off-shapes 1x896] [--baseline DIR]\n');
  process.exit(0);
}
const quick = args.quick!;
const engines = (args.engines ? (args.engines.split(',') as EngineName[]) : ENGINES.filter((e) => e !== 'webkit' || webkitInstalled())) as EngineName[];
for (const e of engines) if (!ENGINES.includes(e)) throw new RangeError(`--engines: ${e} is not one of ${ENGINES.join(', ')}`);
const shapes: Shape[] = args.shapes ? parseShapes(args.shapes) : [...(quick ? QUICK_SHAPES : DEFAULT_SHAPES)];
const budgetMs = Number(args.budget ?? (quick ? 20 : 500));
if (!(budgetMs > 0)) throw new RangeError(`--budget must be a positive number of ms, got ${args.budget}`);
const outDir = resolve(args.out ?? (quick ? join(RESULTS, 'quick') : RESULTS));
const isolated = !args['no-isolation'];
const halfShapes = args['half-shapes'] ? parseShapes(args['half-shapes']).map(shapeName) : quick ? ['8x256'] : ['4096x4096', '1024x5120', '64x4096'];
const oneOffShapes = args['one-off-shapes']
  ? parseShapes(args['one-off-shapes']).map(shapeName)
  : quick
    ? ['1x896', '8x1024']
    : ['1x896', '1x2048', '8x1024', '64x4096', '256x4096', '1024x5120'];
const log = (s: string) => process.stderr.write(s + '\n');
const LONG = 60 * 60_000;
const baseline = args.baseline ? resolve(args.baseline) : undefined;
/** The cold start's row length, and its rounds (a new page for each load). */
const COLD_DIM = 896;
const COLD_ROUNDS = quick ? 1 : 7;
const REPO = fileURLToPath(new URL('..', import.meta.url));

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

/** A fresh demo page of `e`, ready. */
async function demoPage(e: Engine, url: string): Promise<{ page: EnginePage; env: PageEnv }> {
  const page = await e.newPage();
  await page.goto(`${url}demo/`);
  await waitFor(page, 'globalThis.rmsnormDemo !== undefined', 120_000);
  return { page, env: await page.evaluate<PageEnv>('globalThis.rmsnormDemo.ready', 120_000) };
}

const server = await startDemoServer({
  isolated,
  // Each case's onnxruntime model, built here as the Node benchmark builds it (the same case
  // of shared/reference.js makeCase, the same hand-encoded RMSNormalization model).
  // The cold-start page fetches the same case's weight. A baseline checkout is served under /baseline/.
  routes(path, res, url) {
    if (baseline && path.startsWith('/baseline/')) {
      const file = resolve(baseline, '.' + path.slice('/baseline'.length));
      if (!file.startsWith(baseline + '/')) return false;
      res.writeHead(200, { 'Content-Type': MIME[extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
      return true;
    }
    if (path !== '/ort-model' && path !== '/ort-weight') return false;
    const r = Number(url.searchParams.get('rows'));
    const d = Number(url.searchParams.get('dim'));
    const c = makeCase({ rows: r, dim: d });
    const body = path === '/ort-weight' ? new Uint8Array(c.w.buffer, c.w.byteOffset, c.w.byteLength) : buildNormModel(r, d, c.w, c.eps, RMS_NORMALIZATION);
    res.writeHead(200, { 'Content-Type': 'application/octet-stream' }).end(Buffer.from(body));
    return true;
  },
});
const cpu = os.cpus()[0]?.model?.trim() ?? 'unknown';
const machine = { cpu, cores: os.availableParallelism(), memoryGB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10, platform: `${os.platform()} ${os.release()} ${os.arch()}` };
const oneOff: Record<string, unknown> = {};
mkdirSync(outDir, { recursive: true });
try {
  for (const name of engines) await benchEngine(name);
} finally {
  await server.close();
}
writeFileSync(join(outDir, 'one-off-browser.json'), JSON.stringify({ date: new Date().toISOString(), machine, engines: oneOff }, null, 2) + '\n');
log(`wrote ${join(outDir, 'one-off-browser.json')}`);
if (outDir === resolve(RESULTS)) {
  writeBenchmarks();
  log(`wrote ${BENCHMARKS_MD}`);
}

/** Runs everything in one engine and writes its files. */
async function benchEngine(name: EngineName): Promise<void> {
  const started = Date.now();
  const engine = await launchEngine(name);
  const version = engine.version;
  let rows: Row[];
  let env: PageEnv;
  let half: { builds: string[]; rows: { shape: string; pair: string; ratio: number }[] };
  let cold: ColdStartPages;
  try {
    const d = await demoPage(engine, server.url);
    env = d.env;
    log(`${name} ${version}: crossOriginIsolated=${env.crossOriginIsolated}, init() build ${env.build}, pool ${env.poolMode} × ${env.poolThreads}`);
    const cfg = { shapes: shapes.map(shapeName), ops: ['copy', 'forward', 'backward', 'layernorm'], budgetMs };
    rows = await d.page.evaluate<Row[]>(`globalThis.rmsnormDemo.run(${JSON.stringify(cfg)})`, LONG);
    if (d.page.errors.length) log(`page errors:\n${d.page.errors.join('\n')}`);
    await d.page.close();
    log(`${name}: ${rows.length} rows in ${Math.round((Date.now() - started) / 1000)} s`);
    // onnxruntime-web in the page, one page per thread count (it reads numThreads once).
    const threadCounts = [...new Set([1, env.poolMode === 'threads' ? Math.min(env.cores, machine.cores) : 1])];
    for (const threads of threadCounts) {
      const p = await demoPage(engine, server.url);
      const ortCfg = { shapes: cfg.shapes, ops: ['forward'], only: ['ort-web'], budgetMs, ort: { threads, modelUrl: '/ort-model' } };
      rows.push(...(await p.page.evaluate<Row[]>(`globalThis.rmsnormDemo.run(${JSON.stringify(ortCfg)})`, LONG)));
      if (p.page.errors.length) log(`page errors (onnxruntime-web, ${threads} threads):\n${p.page.errors.join('\n')}`);
      await p.page.close();
    }
    // Half precision, and the one-off call's breakdown, each in a page of its own.
    {
      const p = await demoPage(engine, server.url);
      const halfCfg = { shapes: halfShapes, rounds: quick ? 1 : 5, budgetMs: quick ? 20 : 200, minBatchMs: Math.max(1, 200 * env.clockResolutionMs) };
      half = await p.page.evaluate(`globalThis.rmsnormDemo.halfPairs(${JSON.stringify(halfCfg)})`, LONG);
      await p.page.close();
    }
    {
      const p = await demoPage(engine, server.url);
      const o = await p.page.evaluate<{ rows: { shape: string }[] }>(`globalThis.rmsnormDemo.oneOff(${JSON.stringify({ shapes: oneOffShapes, rounds: quick ? 1 : 5, budgetMs: quick ? 20 : 200 })})`, LONG);
      oneOff[name] = { version, userAgent: env.userAgent, build: env.build, ...o };
      await p.page.close();
    }
    cold = await coldStartPages(engine);
    for (const c of cold.rows) log(`${name} cold start, ${c.name}: ${c.ms.toFixed(1)} ms`);
  } finally {
    await engine.close();
  }
  write(name, version, env, rows, half, cold, started);
}

/** Medians of a page's time to its first result, per contender (ms). */
interface ColdStartPages {
  dim: number;
  rounds: number;
  rows: { name: string; ms: number }[];
}

/**
 * The cold-start page (demo/cold-start/) in new pages of `engine`, COLD_ROUNDS rounds that
 * alternate this package, the baseline's (with --baseline) and onnxruntime-web; medians.
 */
async function coldStartPages(engine: Engine): Promise<ColdStartPages> {
  const lib = (entry: string) => `demo/cold-start/?dim=${COLD_DIM}&lib=${encodeURIComponent(entry)}`;
  const targets: [string, string][] = [
    ['rmsnorm-wasm', lib('/' + relative(REPO, mainEntry(REPO)))],
    ...(baseline ? [['rmsnorm-wasm (baseline)', lib('/baseline/' + relative(baseline, mainEntry(baseline)))] as [string, string]] : []),
    ['onnxruntime-web', `demo/cold-start/?dim=${COLD_DIM}&ort=1`],
  ];
  const ms = new Map<string, number[]>();
  for (let r = 0; r < COLD_ROUNDS; r++) {
    for (const [name, path] of targets) {
      const page = await engine.newPage();
      try {
        await page.goto(server.url + path);
        await waitFor(page, 'globalThis.coldStart !== undefined', 120_000);
        const c = await page.evaluate<{ ms?: number; ok?: boolean; error?: string; steps?: object }>('globalThis.coldStart');
        if (process.env.COLD_STEPS) log(`  ${name}: ${JSON.stringify(c)}`);
        if (c.error !== undefined || !c.ok) throw new Error(`${engine.name}, cold start of ${name}: ${c.error ?? 'the first result is not the normalized row'}`);
        ms.set(name, [...(ms.get(name) ?? []), c.ms!]);
      } finally {
        await page.close();
      }
    }
  }
  const median = (a: number[]) => [...a].sort((p, q) => p - q)[Math.floor(a.length / 2)]!;
  return { dim: COLD_DIM, rounds: COLD_ROUNDS, rows: targets.map(([name]) => ({ name, ms: Math.round(median(ms.get(name)!) * 10) / 10 })) };
}

/** The engine's result files: browser-NAME.json and .svg, half-browser-NAME.json. */
function write(
  name: EngineName, version: string, env: PageEnv, rows: Row[], half: { builds: string[]; rows: { shape: string; pair: string; ratio: number }[] },
  coldStart: ColdStartPages, started: number,
): void {
  // JSON turned the page's Infinity (failed checks) into null: put it back for the report.
  for (const r of rows) {
    if (r.check.maxAbsErr === null) r.check.maxAbsErr = Infinity;
    if (r.check.worstToTolerance === null) r.check.worstToTolerance = Infinity;
  }
  const shapeNames = shapes.map(shapeName);
  const title = { chromium: 'Chromium', firefox: 'Firefox', webkit: 'WebKit (MiniBrowser)' }[name];
  const minBatchMs = Math.max(1, 200 * env.clockResolutionMs);
  const notes = [
    `${title} ${version} (${name === 'webkit' ? 'under Xvfb' : 'headless'}), page ${env.crossOriginIsolated ? 'cross-origin isolated' : 'not cross-origin isolated'}; pool in ${env.poolMode} mode with ${env.poolThreads} worker(s) (navigator.hardwareConcurrency = ${env.cores}).`,
    `Timing: batched calls timed with performance.now() (resolution ${(env.clockResolutionMs * 1000).toPrecision(3)} µs), batches ≥ ${Number(minBatchMs.toPrecision(3))} ms, per-call time = batch ÷ calls, ${budgetMs} ms of samples per row (at least 5).`,
    'onnxruntime-web 1.30 runs in the page (its wasm EP, one RMSNormalization node, opset 23), in a page of its own per thread count; only session.run() on a tensor made once is timed, which includes its copies of X in and Y out.',
    'js-optimized, onnxruntime-node and pool sizes other than the core count are only in the Node benchmark (npm run bench).',
  ];
  const date = new Date().toISOString();
  const durationS = Math.round((Date.now() - started) / 1000);
  const text = writeRun(
    outDir,
    `browser-${name}`,
    shapes,
    rows,
    {
      machine,
      node: process.versions.node,
      // The page's JavaScript engine is the browser's; its version is not visible to a page.
      v8: null,
      reference: 'float64, same inputs, computed in the page',
      date,
      quick,
      durationS,
      timing: Object.fromEntries(shapeNames.map((s) => [s, { budgetMs, minBatchMs, method: 'batched performance.now()' }])),
      notes,
      extra: {
        browser: {
          name, version, userAgent: env.userAgent, crossOriginIsolated: env.crossOriginIsolated, initBuild: env.build,
          poolMode: env.poolMode, poolThreads: env.poolThreads, hardwareConcurrency: env.cores, clockResolutionMs: env.clockResolutionMs,
        },
        coldStart,
      },
    },
    `rmsnorm-wasm in ${title}: RMSNorm float32 throughput`,
    `${cpu}, ${machine.cores} cores, ${title} ${version} (${env.crossOriginIsolated ? 'cross-origin isolated' : 'not isolated'}), ${date.slice(0, 10)}`,
  );
  for (const s of shapeNames) {
    process.stdout.write(`\n== ${title} ${s}  (median of batched samples; ±rme = 95% margin of error of the mean)\n`);
    process.stdout.write(shapeTable(rows, s) + '\n');
  }
  process.stdout.write(`\n${title} summary: ${text}\n`);
  process.stdout.write(`\n${title}, half precision (zero-copy; ratio = baseline time ÷ the other's, median of rounds), builds ${half.builds.join(', ')}:\n`);
  for (const r of half.rows) process.stdout.write(`  ${r.shape.padEnd(10)} ${r.pair.padEnd(52)} ${r.ratio.toFixed(2)}\n`);
  writeFileSync(
    join(outDir, `half-browser-${name}.json`),
    JSON.stringify({ date, cpu, cores: machine.cores, browser: { name, version, crossOriginIsolated: env.crossOriginIsolated }, builds: half.builds, rows: half.rows }, null, 2) + '\n',
  );
  log(`wrote browser-${name}.json, .svg and half-browser-${name}.json in ${outDir} (${durationS} s)`);
}
