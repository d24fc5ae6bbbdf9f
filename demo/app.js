// @ts-check
/**
 * The demo page: loads the library (from ../dist, so serve the repository root: `npm run demo`),
 * shows what this page got (isolation, build, pool mode), runs the contenders of page-bench.js on a
 * chosen shape and draws a table and a chart. `window.rmsnormDemo` exposes the same run to
 * scripts (demo/bench-browser.ts drives it headless).
 * @module
 */
import * as lib from '../bundle/index.js';
import { benchKernels } from './bench-kernels.js';
import { halfPairs } from './half-pairs.js';
import { breakdown } from './one-off.js';
import { clockResolution, contenders, derive, makeCase, measure, ortWebContender, parseShape, reference } from './page-bench.js';

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const SVG = 'http://www.w3.org/2000/svg';
const COLORS = {
  'js-naive': 'var(--c-naive)', scalar: 'var(--c-scalar)', wasm: 'var(--c-simd)', zero: 'var(--c-zero)',
  pool: 'var(--c-pool)', poolZero: 'var(--c-pool-zero)', copy: 'var(--c-copy)',
};

/** Bar colour of a row: by family, with the scalar build and the zero-copy paths apart. */
function color(r) {
  if (r.contender === 'wasm-scalar') return COLORS.scalar;
  if (r.family === 'wasm') return r.zeroCopy ? COLORS.zero : COLORS.wasm;
  if (r.family === 'pool') return r.zeroCopy ? COLORS.poolZero : COLORS.pool;
  return COLORS[r.family] ?? COLORS.copy;
}

/** What this page runs on; filled by setup(). */
const env = {
  crossOriginIsolated: globalThis.crossOriginIsolated === true,
  build: '',
  poolMode: '',
  poolThreads: 0,
  simd: lib.simdSupported(),
  threadsAvailable: lib.threadsAvailable(),
  cores: navigator.hardwareConcurrency || 1,
  userAgent: navigator.userAgent,
  clockResolutionMs: 0,
};

let ctx = /** @type {{ lib: any, bench: any, simd: any, scalar: any, pool: any, poolInstance: any } | null} */ (null);

/**
 * Loads the default build (what init() picks), the simd and scalar builds, and a pool with one
 * worker per core; views for the pool's zero-copy rows come from the instance of the pool's build.
 */
async function setup() {
  await lib.init();
  const [simd, scalar, pool, bench] = await Promise.all([lib.loadRmsNorm('simd'), lib.loadRmsNorm('scalar'), lib.createPool(), benchKernels()]);
  const poolInstance = await lib.loadRmsNorm(pool.build);
  ctx = { lib, bench, simd, scalar, pool, poolInstance };
  env.build = lib.instance()?.build ?? '?';
  env.poolMode = pool.mode;
  env.poolThreads = pool.threads;
  env.clockResolutionMs = clockResolution();
  showEnv();
  return env;
}

function browserName() {
  const m = /(HeadlessChrome|Chrome|Chromium|Firefox|Version)\/([\d.]+)/.exec(navigator.userAgent);
  if (!m) return navigator.userAgent;
  const name = m[1] === 'Version' ? 'Safari' : m[1];
  return `${name} ${m[2]?.split('.')[0]}`;
}

function badge(yes, text) {
  const s = document.createElement('span');
  s.className = `badge ${yes ? 'yes' : 'no'}`;
  s.textContent = text;
  return s;
}

function showEnv() {
  $('env-isolated').replaceChildren(badge(env.crossOriginIsolated, env.crossOriginIsolated ? 'yes — SharedArrayBuffer available' : 'no — no SharedArrayBuffer'));
  $('env-build').replaceChildren(badge(env.build !== 'scalar', env.build));
  $('env-pool').replaceChildren(
    badge(env.poolMode === 'threads', env.poolMode === 'threads' ? `threads × ${env.poolThreads}` : 'single (calling thread)'),
  );
  $('env-simd').textContent = env.simd ? 'yes' : 'no (scalar build)';
  $('env-cores').textContent = String(env.cores);
  $('env-browser').textContent = browserName();
  $('env-note').textContent = env.crossOriginIsolated
    ? `COOP/COEP headers are set: the pool's workers share one wasm memory. Clock resolution ${fmtTime(env.clockResolutionMs)}.`
    : `Without COOP/COEP headers there is no SharedArrayBuffer: the pool runs every call on this thread with the ${env.build} build (same results). Clock resolution ${fmtTime(env.clockResolutionMs)}.`;
}

/** `ms` as µs or ms with 3 significant digits. */
function fmtTime(ms) {
  if (ms == null) return '—';
  if (ms < 1) return `${(ms * 1000).toPrecision(3)} µs`;
  return `${ms.toPrecision(3)} ms`;
}

const fmt = (v, d = 2) => (v == null ? '—' : v >= 100 ? v.toFixed(0) : v.toFixed(d));

/**
 * onnxruntime-web's contender with `threads` threads, the package loaded from the repository's
 * node_modules (it fetches its own .wasm from there). Once per page: a second thread count
 * would be ignored by onnxruntime-web.
 * @param {number} threads
 * @param {string} modelUrl where the server gives each case's ONNX model (`?rows=R&dim=D`)
 */
async function ortContender(threads, modelUrl) {
  const dist = new URL('../node_modules/onnxruntime-web/dist/', import.meta.url).href;
  const ort = await import(`${dist}ort.min.mjs`);
  ort.env.wasm.wasmPaths = dist;
  ort.env.wasm.numThreads = threads;
  ort.env.logLevel = 'error';
  return ortWebContender(ort, threads, async (c) => new Uint8Array(await (await fetch(`${modelUrl}?rows=${c.rows}&dim=${c.dim}`)).arrayBuffer()));
}

/**
 * Runs every contender of `ops` on every shape; `onRow` sees each row as it completes.
 * With `ort` (the headless benchmark, which builds the models), onnxruntime-web with that many
 * threads is a contender too; `only` keeps the contenders of those families.
 * @param {{ shapes?: string[], ops?: string[], budgetMs?: number, only?: string[],
 *   ort?: { threads: number, modelUrl: string },
 *   onRow?: (r: any, i: number, n: number) => void }} [cfg]
 * @returns {Promise<any[]>} rows in bench/types.ts `Row` format, derived columns filled
 */
async function run(cfg = {}) {
  await ready;
  if (!ctx) throw new Error('not initialized');
  const shapes = (cfg.shapes ?? ['64x4096']).map(parseShape);
  const ops = cfg.ops ?? ['forward', 'backward', 'copy'];
  const budgetMs = cfg.budgetMs ?? 500;
  // ≥ 200 clock steps per batch, so that coarse clocks cost < 0.5% per sample.
  const minBatchMs = Math.max(1, 200 * env.clockResolutionMs);
  const all = contenders(ctx);
  if (cfg.ort) all.push(await ortContender(cfg.ort.threads, cfg.ort.modelUrl));
  const list = all.filter((k) => ops.includes(k.op) && (!cfg.only || cfg.only.includes(k.family)));
  const rows = [];
  const total = shapes.length * list.length;
  for (const s of shapes) {
    const c = makeCase(s);
    const ref = reference(c);
    for (const k of list) {
      // Let the page paint between measurements.
      await new Promise((r) => setTimeout(r, 0));
      const row = await measure(k, c, ref, budgetMs, minBatchMs);
      rows.push(row);
      derive(rows);
      cfg.onRow?.(row, rows.length, total);
    }
  }
  return derive(rows);
}

function renderTable(rows) {
  const body = /** @type {HTMLTableSectionElement} */ ($('table').querySelector('tbody'));
  body.replaceChildren(
    ...['forward', 'backward']
      .flatMap((op) => rows.filter((r) => r.op === op))
      .map((r) => {
        const tr = document.createElement('tr');
        const cells = [
          r.op,
          r.contender,
          fmtTime(r.medianMs),
          fmt(r.gbPerS),
          r.vsNaive == null ? '—' : `${fmt(r.vsNaive, 1)}×`,
          r.check.passed ? '✓ passed' : `✗ ${r.check.detail ?? 'failed'}`,
        ];
        cells.forEach((text, i) => {
          const td = document.createElement('td');
          if (i === 1) {
            const sw = document.createElement('span');
            sw.className = 'swatch';
            sw.style.background = color(r);
            td.append(sw);
          }
          td.append(text);
          if (i >= 2 && i <= 4) td.className = 'num';
          if (i === 5) td.className = r.check.passed ? 'pass' : 'fail';
          tr.append(td);
        });
        return tr;
      }),
  );
}

function el(name, attrs, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text != null) e.textContent = text;
  return e;
}

/** Horizontal bars of GB/s, grouped by op, with the single-thread copy as a dashed roof line. */
function renderChart(rows) {
  const svg = $('chart');
  // One SVG unit per CSS pixel, so text keeps its CSS size whatever the page width.
  const W = Math.max(360, Math.round(svg.getBoundingClientRect().width) || 560);
  const left = 170;
  const right = 110;
  const barH = 20;
  const gap = 6;
  const bars = rows.filter((r) => r.op === 'forward' || r.op === 'backward');
  const copy = rows.find((r) => r.op === 'copy' && r.gbPerS != null);
  const max = Math.max(1e-9, ...bars.map((r) => r.gbPerS ?? 0), copy?.gbPerS ?? 0);
  const scale = (v) => ((W - left - right) * v) / max;
  const kids = [];
  let y = 8;
  for (const op of ['forward', 'backward']) {
    const group = bars.filter((r) => r.op === op);
    if (!group.length) continue;
    kids.push(el('text', { x: 0, y: y + 12, class: 'group' }, op));
    y += 22;
    for (const r of group) {
      kids.push(el('text', { x: left - 8, y: y + barH - 5, 'text-anchor': 'end' }, r.contender));
      const w = r.gbPerS == null ? 0 : Math.max(1, scale(r.gbPerS));
      kids.push(el('rect', { x: left, y, width: w, height: barH, rx: 3, fill: color(r) }));
      const label = r.gbPerS == null ? (r.check.passed ? 'error' : 'check failed') : `${fmt(r.gbPerS)} GB/s`;
      kids.push(el('text', { x: left + w + 6, y: y + barH - 5, class: 'axis' }, label));
      y += barH + gap;
    }
    y += 8;
  }
  if (copy) {
    const x = left + scale(copy.gbPerS);
    kids.push(el('line', { x1: x, x2: x, y1: 4, y2: y - 8, stroke: '#667085', 'stroke-dasharray': '4 3' }));
    kids.push(el('text', { x: Math.min(x, W - 4), y: y + 8, 'text-anchor': x > W - 120 ? 'end' : 'middle', class: 'axis' }, `1-thread copy ${fmt(copy.gbPerS)} GB/s`));
    y += 14;
  }
  svg.setAttribute('viewBox', `0 0 ${W} ${Math.max(y, 60)}`);
  svg.replaceChildren(...kids);
}

function render(rows) {
  renderTable(rows);
  renderChart(rows);
}

function currentShape() {
  return `${/** @type {HTMLInputElement} */ ($('rows')).value}x${/** @type {HTMLInputElement} */ ($('dim')).value}`;
}

function wireControls() {
  const preset = /** @type {HTMLSelectElement} */ ($('preset'));
  const rows = /** @type {HTMLInputElement} */ ($('rows'));
  const dim = /** @type {HTMLInputElement} */ ($('dim'));
  const button = /** @type {HTMLButtonElement} */ ($('run'));
  preset.addEventListener('change', () => {
    if (preset.value === 'custom') return;
    const s = parseShape(preset.value);
    rows.value = String(s.rows);
    dim.value = String(s.dim);
  });
  for (const input of [rows, dim]) input.addEventListener('input', () => (preset.value = 'custom'));
  $('controls').addEventListener('submit', async (e) => {
    e.preventDefault();
    const status = $('status');
    status.classList.remove('error');
    let shape;
    try {
      shape = currentShape();
      parseShape(shape);
    } catch (err) {
      status.textContent = String(/** @type {Error} */ (err).message);
      status.classList.add('error');
      return;
    }
    button.disabled = true;
    document.body.dataset.state = 'running';
    $('res-shape').textContent = `— ${shape.replace('x', ' × ')}`;
    const shown = [];
    try {
      const budgetMs = Number(/** @type {HTMLSelectElement} */ ($('budget')).value);
      const rows = await run({
        shapes: [shape],
        budgetMs,
        onRow: (r, i, n) => {
          shown.push(r);
          render(shown);
          status.textContent = `measured ${i} of ${n}: ${r.op} ${r.contender}`;
        },
      });
      render(rows);
      const failed = rows.filter((r) => !r.check.passed).length;
      status.textContent = failed ? `${failed} contender(s) failed the check` : `done: all ${rows.length} results passed the float64 check`;
      if (failed) status.classList.add('error');
      document.body.dataset.state = 'done';
    } catch (err) {
      status.textContent = `failed: ${String(err)}`;
      status.classList.add('error');
      document.body.dataset.state = 'error';
    } finally {
      button.disabled = false;
    }
  });
}

const ready = setup();
wireControls();
ready.then(
  () => {
    const button = /** @type {HTMLButtonElement} */ ($('run'));
    button.disabled = false;
    button.textContent = 'Run';
    document.body.dataset.state = 'ready';
  },
  (err) => {
    $('status').textContent = `could not load rmsnorm-wasm: ${String(err)}`;
    $('status').classList.add('error');
    document.body.dataset.state = 'error';
  },
);

/**
 * The scripting interface: `await rmsnormDemo.ready`, then `await rmsnormDemo.run({ shapes, ops,
 * budgetMs })`, or `await rmsnormDemo.halfPairs({ shapes, rounds, budgetMs })` (half-pairs.js).
 */
Object.assign(globalThis, { rmsnormDemo: { ready, env, run, halfPairs: (cfg) => halfPairs(lib, cfg), oneOff: (cfg) => breakdown(lib, cfg) } });
