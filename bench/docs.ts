/**
 * docs/benchmarks.md, generated from the committed results (bench/results/*.json): no figure in
 * it is typed by hand. `npm run bench` rewrites it after a run; `tsx bench/docs.ts` rewrites it
 * from the JSON as it is, and `tsx bench/docs.ts --check` exits 1 when the committed page
 * differs from what the JSON makes (a test runs that).
 * @module
 */
import { EXIT_CODES_TEXT } from '../ts/node/exit-codes.js';
import { OPTIONS_END, OPTIONS_START, renderApiOptions } from './api-options.js';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Comparison } from './report.js';

const RESULTS = new URL('./results/', import.meta.url);
/** Where the page goes. */
export const BENCHMARKS_MD = fileURLToPath(new URL('../docs/benchmarks.md', import.meta.url));

interface Row {
  shape: string;
  op: string;
  contender: string;
  family: string;
  threads: number;
  medianMs: number | null;
}

interface RunJson {
  machine: { cpu: string; cores: number; memoryGB: number };
  node: string;
  v8: string;
  /** The builds init() and the pool loaded (runs from before this field have none). */
  builds?: { init: string; pool: string };
  date: string;
  browser?: { name: string; version: string; crossOriginIsolated: boolean };
  shapes: string[];
  comparisons?: Comparison[];
  rows: Row[];
}

const read = <T>(name: string): T | null => {
  const u = new URL(name, RESULTS);
  return existsSync(u) ? (JSON.parse(readFileSync(u, 'utf8')) as T) : null;
};

/** A time in ms as people read it: µs below 1 ms, three significant digits. */
function time(ms: number): string {
  const [v, unit] = ms < 1 ? [ms * 1000, 'µs'] : [ms, 'ms'];
  return `${v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0)} ${unit}`;
}

/** The columns of a results table: a contender, or the best of a family (its thread count shown). */
const COLUMNS: { head: string; pick: (r: Row) => boolean; best?: boolean; op?: string }[] = [
  { head: 'default call', pick: (r) => r.contender === 'wasm-default' },
  { head: 'layer', pick: (r) => r.contender === 'wasm-layer' },
  { head: 'out given', pick: (r) => r.contender === 'wasm-simd' },
  { head: 'zero-copy', pick: (r) => r.contender === 'wasm-simd-zero-copy' },
  { head: 'pool, zero-copy', pick: (r) => r.family === 'pool' && r.contender.endsWith('-zero-copy'), best: true },
  { head: 'plain JS', pick: (r) => r.contender === 'js-naive' },
  { head: 'plain JS, new array', pick: (r) => r.contender === 'js-naive-new' },
  { head: 'optimized JS', pick: (r) => r.contender === 'js-optimized' },
  { head: 'onnxruntime-web', pick: (r) => r.family === 'ort-web', best: true },
  { head: 'onnxruntime-node', pick: (r) => r.family === 'ort-node', best: true },
  { head: 'rten-vecmath (Rust)', pick: (r) => r.contender === 'rten-vecmath' },
  { head: 'hand-written two-pass', pick: (r) => r.contender === 'roof-two-pass' },
  { head: 'copy of x to y', pick: (r) => r.contender === 'copy', op: 'copy' },
];

/** The time table of `op`: one row per shape, one column per contender that ran it. */
function table(run: RunJson, op: string): string {
  const at = (shape: string, c: (typeof COLUMNS)[number]) =>
    run.rows
      .filter((r) => r.shape === shape && r.op === (c.op ?? op) && r.medianMs !== null && c.pick(r))
      .sort((a, b) => a.medianMs! - b.medianMs!)[0];
  const cols = COLUMNS.filter((c) => run.shapes.some((s) => at(s, c)));
  const lines = [`| rows × dim | ${cols.map((c) => c.head).join(' | ')} |`, `|---|${cols.map(() => '---:').join('|')}|`];
  for (const s of run.shapes) {
    const cells = cols.map((c) => {
      const r = at(s, c);
      if (!r) return '';
      return c.best ? `${time(r.medianMs!)} (${r.threads} thread${r.threads === 1 ? '' : 's'})` : time(r.medianMs!);
    });
    lines.push(`| ${s.replace('x', ' × ')} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

/** The comparisons as a table: one row per comparison, one column per shape. */
function ratios(run: RunJson): string {
  const cs = (run.comparisons ?? []).filter((c) => c.shapes.length > 0);
  const lines = [`| how many times faster | ${run.shapes.map((s) => s.replace('x', ' × ')).join(' | ')} |`, `|---|${run.shapes.map(() => '---:').join('|')}|`];
  for (const c of cs) {
    lines.push(`| ${c.text} | ${run.shapes.map((s) => c.shapes.find((x) => x.shape === s)?.ratio.toFixed(2) ?? '').join(' | ')} |`);
  }
  return lines.join('\n');
}

/** The engines bench:browser runs, and their names in a page's text. */
const ENGINE_TITLES: Record<string, string> = { chromium: 'Chromium', firefox: 'Firefox', webkit: 'WebKit' };

function machine(run: RunJson): string {
  const m = run.machine;
  const b = run.browser;
  const how = b && b.name === 'webkit' ? 'MiniBrowser under Xvfb' : 'headless';
  const where = b ? `${ENGINE_TITLES[b.name] ?? b.name} ${b.version} (${how}${b.crossOriginIsolated ? ', cross-origin isolated' : ''})` : `Node ${run.node} (V8 ${run.v8})`;
  const builds = run.builds ? `; builds: \`init()\` ${run.builds.init}, pool ${run.builds.pool}` : '';
  return `${m.cpu}, ${m.cores} cores, ${m.memoryGB} GiB; ${where}${builds}; ${run.date.slice(0, 10)}.`;
}

function runSection(title: string, run: RunJson, command: string, backward: boolean): string {
  return [
    `## ${title}`,
    '',
    `${machine(run)} \`${command}\`; medians, float32, every contender checked against a float64 reference first.`,
    '',
    '**Forward**',
    '',
    table(run, 'forward'),
    '',
    ...(backward ? ['**Backward** (dx and dweight; onnxruntime has no RMSNorm backward)', '', table(run, 'backward'), ''] : []),
    '**Ratios**',
    '',
    ratios(run),
    '',
  ].join('\n');
}

interface PairRow {
  shape: string;
  pair: string;
  ratio?: number;
  speedup?: number;
}

function pairs(title: string, intro: string, json: { rows: PairRow[]; date: string } | null): string {
  if (!json) return '';
  const lines = [`## ${title}`, '', `${intro} (${json.date.slice(0, 10)}).`, '', '| rows × dim | comparison | times faster |', '|---|---|---:|'];
  for (const r of json.rows) lines.push(`| ${r.shape.replace('x', ' × ')} | ${r.pair} | ${(r.ratio ?? r.speedup)!.toFixed(2)} |`);
  return lines.join('\n') + '\n';
}

interface PlacementsJson {
  date: string;
  cpu: string;
  cores: number;
  rounds: number;
  offsets: number[];
  rows: { op: string; moved: string; shape: string; gbPerS: Record<string, number[]>; medianVsRoof: number; worstOverBest: Record<string, number> }[];
}

/** Where the arrays sit (bench/placements.ts): per sweep and shape, the medians and spreads; one sweep in full. */
function placements(json: PlacementsJson | null): string {
  if (!json) return '';
  const med = (a: number[]) => [...a].sort((u, v) => u - v)[a.length >> 1]!;
  const range = (a: number[]) => `${Math.min(...a).toFixed(1)}–${Math.max(...a).toFixed(1)}`;
  const lines = [
    '## Where the arrays sit',
    '',
    `${json.cpu}, ${json.cores} cores; ${json.date.slice(0, 10)}. \`npm run bench:placements\`: the zero-copy float32 calls and the hand-written ` +
      `kernels with one operand moved against the others in 16-byte steps, \`(moved − x) mod 256\` = ${json.offsets[0]}…${json.offsets[json.offsets.length - 1]} bytes, ` +
      `the rest on 4 KiB boundaries; each placement's median over ${json.rounds} rounds. GB/s: the bytes a call reads and writes ÷ its time.`,
    '',
    '| call | operand moved | rows × dim | package GB/s, median (range) | hand-written GB/s, median (range) | package ÷ hand-written | worst ÷ best placement: package / hand-written |',
    '|---|---|---|---:|---:|---:|---:|',
  ];
  for (const r of json.rows) {
    const p = r.gbPerS.package!, h = r.gbPerS.roof!;
    lines.push(
      `| ${r.op} | \`${r.moved}\` | ${r.shape.replace('x', ' × ')} | ${med(p).toFixed(1)} (${range(p)}) | ${med(h).toFixed(1)} (${range(h)}) | ${r.medianVsRoof.toFixed(2)} | ` +
        `${r.worstOverBest.package!.toFixed(2)} / ${r.worstOverBest.roof!.toFixed(2)} |`,
    );
  }
  const full = json.rows.find((r) => r.op === 'forward' && r.shape === '32x4096') ?? json.rows[0];
  if (full) {
    lines.push(
      '',
      `Every placement of the ${full.op} at ${full.shape.replace('x', ' × ')}, GB/s:`,
      '',
      `| \`(${full.moved} − x) mod 256\` | ${json.offsets.join(' | ')} |`,
      `|---|${json.offsets.map(() => '---:').join('|')}|`,
      `| package | ${full.gbPerS.package!.map((g) => g.toFixed(0)).join(' | ')} |`,
      `| hand-written | ${full.gbPerS.roof!.map((g) => g.toFixed(0)).join(' | ')} |`,
    );
  }
  return lines.join('\n') + '\n';
}

interface PoolJson {
  date: string;
  cpu: string;
  cores: number;
  threads: number;
  rounds: number;
  pingMedianUs: number;
  bySize: { rows: number; dim: number; kind: string; fwdRatio: number; bwdRatio: number }[];
  copyScaling?: { mib: number; oneGBps: number; twoGBps: number }[];
  /** The calling patterns (runs from before they were timed have none). */
  patterns?: { rows: { rows: number; dim: number; kind: string; pattern: string; ratio: number }[]; worst: { rows: number; dim: number; kind: string; pattern: string; ratio: number } };
}

function pool(json: PoolJson | null): string {
  if (!json) return '';
  const kinds = [...new Set(json.bySize.map((r) => r.kind))];
  const sizes = [...new Set(json.bySize.map((r) => r.rows * r.dim))];
  const title: Record<string, string> = { views: 'views', shared: 'SharedArrayBuffer', plain: 'plain, `out` given', default: 'plain, default call' };
  const lines = [
    '## The worker pool',
    '',
    `${json.cpu}, ${json.cores} cores, a pool of ${json.threads} threads; ${json.date.slice(0, 10)}. \`npm run bench:pool\`: the pool's time against the sync call's on the same arrays ` +
      `(sync time ÷ pool time, forward / backward), calls in alternating blocks, the median of ${json.rounds} rounds. An empty round trip to the workers: ${json.pingMedianUs.toFixed(1)} µs. ` +
      'Views: of the pool\'s memory (the sync call on views of its build); SharedArrayBuffer: arrays in your own shared buffers; plain: ordinary arrays.',
    '',
    `| size of x | rows × dim | ${kinds.map((k) => title[k] ?? k).join(' | ')} |`,
    `|---|---|${kinds.map(() => '---:').join('|')}|`,
  ];
  for (const n of sizes) {
    const cs = json.bySize.filter((r) => r.rows * r.dim === n);
    lines.push(`| ${(n * 4) / 2 ** 20} MiB | ${cs[0]!.rows} × ${cs[0]!.dim} | ${kinds.map((k) => cs.find((c) => c.kind === k)).map((c) => (c ? `${c.fwdRatio.toFixed(2)} / ${c.bwdRatio.toFixed(2)}` : '')).join(' | ')} |`);
  }
  if (json.copyScaling) {
    lines.push(
      '',
      'Plain arrays are copied in and out by the calling thread while the workers compute (the pool runs them on the calling thread where that is faster). ' +
        `Copies by two threads at once against one, on this machine: ${json.copyScaling.map((c) => `${c.mib} MiB ${c.oneGBps.toFixed(1)} → ${c.twoGBps.toFixed(1)} GB/s (${(c.twoGBps / c.oneGBps).toFixed(2)}×)`).join(', ')}.`,
    );
  }
  if (json.patterns) {
    const ps = json.patterns;
    const names = [...new Set(ps.rows.map((r) => r.pattern))];
    lines.push(
      '',
      'The calling patterns users write, on plain arrays (sync time ÷ pool time: below 1 the pool costs): a loop of awaited calls, each pool call after a sync one, and four calls in flight at once (against four sync calls whose results are held together). A default call allocates its result, and the page faults of that fresh memory are paid by the sync call and the pool alike (they make the default rows noisier); an `out` reused across calls avoids them. ' +
        `The worst: ${ps.worst.ratio.toFixed(2)} (${ps.worst.rows} × ${ps.worst.dim}, ${ps.worst.kind === 'out' ? '`out` given' : 'default call'}, ${ps.worst.pattern}).`,
      '',
      `| rows × dim | call | ${names.join(' | ')} |`,
      `|---|---|${names.map(() => '---:').join('|')}|`,
      ...[...new Set(ps.rows.map((r) => `${r.rows}x${r.dim}|${r.kind}`))].map((key) => {
        const [shape, kind] = key.split('|') as [string, string];
        const cells = names.map((nm) => ps.rows.find((r) => `${r.rows}x${r.dim}` === shape && r.kind === kind && r.pattern === nm)?.ratio.toFixed(2) ?? '');
        return `| ${shape.replace('x', ' × ')} | ${kind === 'out' ? '`out` given' : 'default'} | ${cells.join(' | ')} |`;
      }),
    );
  }
  lines.push('', '![the pool on views by threads](../bench/results/pool-threads.svg)', '');
  return lines.join('\n');
}

interface FileJson {
  date: string;
  cpu: string;
  cores: number;
  rows: number;
  dim: number;
  bytes: number;
  rounds: number;
  seconds: Record<string, number>;
  threads: { threads: number; seconds: number; gbPerS: number }[];
  startupSeconds: number;
  rssGrowthMiB: number;
  /** With the command's own ratios (results from before it was timed have none). */
  ratios: { vsLoop: number; vsCp: number; fsyncVsCpFsync: number; checksumCost: number; commandVsCp?: number; commandFsyncVsCpFsync?: number };
}

/** A table of seconds and GB/s over `bytes` of data, one row per `[label, seconds]`. */
function secondsTable(bytes: number, rows: [string, number][]): string[] {
  return ['| | seconds | GB/s |', '|---|---:|---:|', ...rows.map(([what, s]) => `| ${what} | ${s.toFixed(2)} | ${(bytes / s / 1e9).toFixed(2)} |`)];
}

function file(json: FileJson | null): string {
  if (!json) return '';
  const s = json.seconds;
  const x = (v: number) => `${v.toFixed(2)}×`;
  return [
    '## Files',
    '',
    `A ${json.rows} × ${json.dim} float32 \`.npy\` (${(json.bytes / 2 ** 30).toFixed(0)} GiB) in the page cache; ${json.cpu}, ${json.cores} cores; ${json.date.slice(0, 10)}. ` +
      `\`npm run bench:file\`: medians of ${json.rounds} interleaved rounds, each step from the same start.`,
    '',
    ...secondsTable(json.bytes, [
      ['`cp` (the kernel copies inside itself)', s.cp!],
      ['`cp`, then `fsync` of the copy', s['cp + fsync']!],
      ['one-thread JavaScript loop: read and write 8 MiB at a time', s.loop!],
      ...json.threads.map((t): [string, number] => [`\`normalizeFile\`, ${t.threads} thread${t.threads > 1 ? 's' : ''}, no fsync`, t.seconds]),
      [`\`normalizeFile\`, default (${json.cores} threads, output flushed)`, s.default!],
      ['`normalizeFile`, `checksum` (SHA-256 of the output), no fsync', s.checksum!],
      ...(s.command !== undefined ? [['`rmsnorm-wasm normalize IN OUT --no-fsync`: the command, a process from its start to its end', s.command] as [string, number]] : []),
      ...(s['command + fsync'] !== undefined ? [['`rmsnorm-wasm normalize IN OUT`: the same with its default fsync', s['command + fsync']] as [string, number]] : []),
    ]),
    '',
    `On ${json.cores} threads \`normalizeFile\` ran at ${x(json.ratios.vsLoop)} the one-thread loop and ${x(json.ratios.vsCp)} \`cp\`; with its default fsync, ` +
      `${x(json.ratios.fsyncVsCpFsync)} \`cp\` + \`fsync\`. \`checksum\` took ${x(json.ratios.checksumCost)} the time. The process's resident memory grew by ${json.rssGrowthMiB.toFixed(0)} MiB. ` +
      `\`rmsnorm-wasm normalize\` of a one-row file took ${(json.startupSeconds * 1000).toFixed(0)} ms from the process's start to its end` +
      (json.ratios.commandVsCp !== undefined
        ? `; the command on this file ran at ${x(json.ratios.commandVsCp)} \`cp\` (with fsync ${x(json.ratios.commandFsyncVsCpFsync!)} \`cp\` + \`fsync\`).`
        : '.'),
    '',
    '![normalizeFile GB/s by threads](../bench/results/file-threads.svg)',
    '',
  ].join('\n');
}

interface DatasetJson {
  date: string;
  cpu: string;
  cores: number;
  files: number;
  bytes: number;
  rounds: number;
  seconds: Record<string, number>;
  ratios: { vsCpR: number; fsyncVsCpRSync: number; checksumCost: number };
  perFileMs?: { noFsync: number; default: number; firstFiles?: number; cpR?: number };
  perFileCount?: number;
  perFileCounts?: { few: number; many: number };
}

function dataset(json: DatasetJson | null): string {
  if (!json) return '';
  const s = json.seconds;
  return [
    '## Datasets',
    '',
    `${json.files} files, ${(json.bytes / 1e6).toFixed(0)} MB, as \`scripts/make-dataset.mjs\` makes them (nested \`.npy\` of 1 to 20 000 rows in float32 and float16, ` +
      `safetensors shards with bfloat16 beside int64 and int32 tensors, a Hugging Face cache of links to blobs), in the page cache; ${json.cpu}, ${json.cores} cores; ` +
      `${json.date.slice(0, 10)}. \`npm run bench:file\`: whole processes, start-up included, medians of ${json.rounds} interleaved rounds.`,
    '',
    ...secondsTable(json.bytes, [
      ['`cp -r`', s['cp -r']!],
      ['`cp -r`, then `sync`', s['cp -r + sync']!],
      ['`rmsnorm-wasm normalize IN --out-dir OUT --no-fsync`', s['no fsync']!],
      ['`rmsnorm-wasm normalize IN --out-dir OUT` (each output flushed)', s.default!],
      ['the same, `--no-fsync --checksum`', s.checksum!],
    ]),
    '',
    ...perFileLines(json),
  ].join('\n');
}

/** What one more file costs a run, in words, from dataset.json. */
function perFileLines(json: DatasetJson): string[] {
  const p = json.perFileMs;
  if (!p) return [];
  const what = 'What one more file costs a run (its listing, header, temporary file, rename and manifest line)';
  if (!json.perFileCounts || p.firstFiles === undefined || p.cpR === undefined) {
    return [`${what}, ${json.perFileCount} one-row files against one: ${p.noFsync.toFixed(2)} ms a file with \`--no-fsync\`, ${p.default.toFixed(2)} ms with each output flushed.`, ''];
  }
  const c = json.perFileCounts;
  return [
    `${what}, one-row files: ${p.noFsync.toFixed(2)} ms a file with \`--no-fsync\` (from ${c.few} files to ${c.many}; \`cp -r\` of the ${c.many}: ` +
      `${p.cpR.toFixed(3)} ms a file). The first ${c.few}, while the code warms up, ${p.firstFiles.toFixed(2)} ms each; with each output flushed, ${p.default.toFixed(2)} ms.`,
    '',
  ];
}

interface SizeJson {
  builds: Record<string, { wasm: { bytes: number; gzipBytes: number }; glue: { bytes: number; gzipBytes: number } }>;
  scripts?: Record<'import' | 'pool', { files: number; bytes: number; gzipBytes: number }>;
}

/** The download-size section: per build, the module and its glue, raw and gzipped. */
function size(json: SizeJson | null): string {
  if (!json) return '';
  const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
  return [
    '## Download size',
    '',
    'What a page fetches per build (`npm run bench:size`): the `.wasm` module and its JavaScript',
    'glue, raw and gzip-compressed (level 9). `init()` fetches one plain build; a pool on a',
    'cross-origin-isolated page also fetches its threads twin (see [web apps](web-app.md)).',
    '',
    '| build | .wasm | .wasm gzip | glue gzip |',
    '|---|---:|---:|---:|',
    ...Object.entries(json.builds).map(([b, s]) => `| \`${b}\` | ${kib(s.wasm.bytes)} | ${kib(s.wasm.gzipBytes)} | ${(s.glue.gzipBytes / 1024).toFixed(1)} KiB |`),
    '',
    ...(json.scripts
      ? [
          'And the package\'s JavaScript (each file gzipped on its own, as a server sends it):',
          '',
          '| loaded | files | raw | gzip |',
          '|---|---:|---:|---:|',
          `| by \`import\` (the entry and its chunks) | ${json.scripts.import.files} | ${kib(json.scripts.import.bytes)} | ${kib(json.scripts.import.gzipBytes)} |`,
          `| by \`createPool()\` (the pool's code; its workers fetch their own script) | ${json.scripts.pool.files} | ${kib(json.scripts.pool.bytes)} | ${kib(json.scripts.pool.gzipBytes)} |`,
          '',
        ]
      : []),
  ].join('\n');
}

/** A run's median per-call time (ms) of one contender at one shape, or null. */
const medianOf = (run: RunJson, shape: string, contender: string, op = 'forward'): number | null =>
  run.rows.find((r) => r.shape === shape && r.op === op && r.contender === contender)?.medianMs ?? null;

/** The browsers side by side: each engine's default call and layer against its plain-JS loop. */
function browsersSideBySide(runs: [string, RunJson][]): string {
  if (runs.length === 0) return '';
  const shapes = runs[0]![1].shapes;
  const head = runs.map(([e]) => ENGINE_TITLES[e]);
  const lines = [
    '## The browsers side by side',
    '',
    'The forward, float32, per engine (the tables below give every contender): how many times',
    "faster than the page's own plain-JS loop writing into an array it keeps. Against a loop that",
    'allocates its result, as the default call does, see [what the one-off call costs](#what-the-one-off-call-costs-in-a-page).',
    '',
    `| rows × dim | ${head.map((h) => `${h}: default call`).join(' | ')} | ${head.map((h) => `${h}: layer`).join(' | ')} |`,
    `|---|${runs.map(() => '---:').join('|')}|${runs.map(() => '---:').join('|')}|`,
  ];
  for (const s of shapes) {
    const cell = (run: RunJson, c: string) => {
      const js = medianOf(run, s, 'js-naive');
      const t = medianOf(run, s, c);
      return js && t ? `${(js / t).toFixed(2)}×` : '';
    };
    lines.push(`| ${s.replace('x', ' × ')} | ${runs.map(([, r]) => cell(r, 'wasm-default')).join(' | ')} | ${runs.map(([, r]) => cell(r, 'wasm-layer')).join(' | ')} |`);
  }
  return lines.join('\n') + '\n';
}

interface OneOffJson {
  date: string;
  engines: Record<string, { version: string; build: string; rows: { shape: string; us: Record<string, number> }[] }>;
}

/** Where the default call's time goes in each engine (demo/one-off.js). */
function oneOff(json: OneOffJson | null): string {
  if (!json) return '';
  const cols: [string, string][] = [
    ['plainJs', 'plain JS'], ['default', 'default call'], ['out', 'out given'], ['layer', 'layer'], ['zeroCopy', 'zero-copy'],
    ['newArray', 'new array'], ['newWrite', 'new array, written'], ['copy', 'copy'],
  ];
  const us = (v: number | undefined) => (v === undefined ? '' : v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0));
  const out = [
    '## What the one-off call costs in a page',
    '',
    '`rmsNorm(x, w)` on plain arrays allocates its result, copies `x` into wasm memory, runs the',
    'kernel and copies `y` out into the new array. Beside it, per engine, in µs per call: the',
    'plain-JS loop (allocating its result too), the same call into an array the page keeps',
    '(`out`), the layer, zero-copy, and the pieces: `new Float32Array(n)` alone, the same written',
    'once (`.set(x)`: its pages touched the first time), and one copy into an array the page',
    `keeps. \`npm run bench:browser\` (demo/one-off.js), ${json.date.slice(0, 10)}.`,
    '',
  ];
  for (const [e, r] of Object.entries(json.engines)) {
    out.push(`**${ENGINE_TITLES[e] ?? e} ${r.version}** (build \`${r.build}\`)`, '');
    out.push(`| rows × dim | ${cols.map(([, h]) => h).join(' | ')} |`, `|---|${cols.map(() => '---:').join('|')}|`);
    for (const row of r.rows) out.push(`| ${row.shape.replace('x', ' × ')} | ${cols.map(([k]) => us(row.us[k])).join(' | ')} |`);
    out.push('');
  }
  return out.join('\n');
}

/** The page, from the results as they are. */
export function renderBenchmarks(): string {
  const node = read<RunJson>('latest.json');
  const browsers = Object.keys(ENGINE_TITLES)
    .map((e) => [e, read<RunJson>(`browser-${e}.json`)] as [string, RunJson | null])
    .filter((x): x is [string, RunJson] => x[1] !== null);
  const out = [
    [
    '# Benchmarks',
    '',
    '<!-- Generated by bench/docs.ts from bench/results/*.json: edit the generator, not this page. -->',
    '',
    'Times per call of RMSNorm on the machine named above each table. Compare the ratios within a',
    'table: a shared machine changes from one day to the next. Columns: **default call**',
    '`rmsNorm(x, w)` (allocates its result); **layer** `createRmsNorm(w).forward(x)`; **out given**',
    '`rmsNorm(x, w, { out })` on plain arrays; **zero-copy** the same on views of wasm memory',
    '(`allocF32`); **pool** the worker pool on such views; **plain JS** the loop a user would write;',
    '**optimized JS** the fastest plain JavaScript we could write; onnxruntime running one RMSNorm',
    'node (best thread count); **copy** an in-wasm copy of the same bytes, the memory limit.',
    '',
    '![forward and backward throughput per shape](../bench/results/latest.svg)',
    '',
  ].join('\n'),
  ];
  if (node) out.push(runSection('Node', node, 'npm run bench', true));
  out.push(browsersSideBySide(browsers));
  for (const [e, run] of browsers) out.push(runSection(ENGINE_TITLES[e]!, run, 'npm run bench:browser', true));
  out.push(oneOff(read('one-off-browser.json')));
  const half = read<{ rows: PairRow[]; date: string; build?: string; node?: string }>('half.json');
  const halfOn = half?.build ? ` on the \`${half.build}\` build, Node ${half.node}` : '';
  out.push(pairs('Half precision', `float16 and bfloat16 storage against float32, and the default call against a plain-JS loop on the same data, \`npm run bench:half\`${halfOn}`, half));
  for (const e of Object.keys(ENGINE_TITLES)) {
    const hb = read<{ rows: PairRow[]; date: string; browser: { version: string }; builds: string[] }>(`half-browser-${e}.json`);
    out.push(
      pairs(
        `Half precision in ${ENGINE_TITLES[e]}`,
        `The same pairs in ${ENGINE_TITLES[e]} ${hb?.browser.version ?? ''} on each SIMD build it runs (${(hb?.builds ?? []).join(', ')}), zero-copy${(hb?.builds.length ?? 0) > 1 ? ', and the relaxed-SIMD build against the plain one on the same half data' : ''}, \`npm run bench:browser\``,
        hb,
      ),
    );
  }
  out.push(placements(read('placements.json')));
  out.push(pool(read('pool.json')));
  out.push(file(read('file.json')));
  out.push(dataset(read('dataset.json')));
  out.push(pairs('Variants', 'Each variant against what a user would write without it, `npm run bench:variants`', read('variants.json')));
  out.push(size(read('size.json')));
  return out.filter((s) => s !== '').join('\n').replace(/\n{3,}/g, '\n\n').trimEnd() + '\n';
}

/** The README's results table: a few shapes, the calls a user makes against the alternatives. */
export const README_MD = fileURLToPath(new URL('../README.md', import.meta.url));
const START = '<!-- results:start (generated by bench/docs.ts) -->';
const END = '<!-- results:end -->';
const README_SHAPES = ['1x896', '1x4096', '64x4096', '4096x4096'];
const README_COLUMNS = ['default call', 'layer', 'zero-copy', 'plain JS', 'onnxruntime-web', 'onnxruntime-node'];

/** The README's block between its results markers. */
export function renderReadmeResults(): string {
  const run = read<RunJson>('latest.json');
  if (!run) return '';
  const shown = { ...run, shapes: run.shapes.filter((s) => README_SHAPES.includes(s)) };
  const full = table(shown, 'forward').split('\n');
  const head = full[0]!.split(' | ');
  // Keep the columns a user compares: which to use, against what they would use otherwise.
  const keep = head.map((h, i) => i === 0 || README_COLUMNS.includes(h.replace(/^\| |\s\|$/g, '')));
  const cut = (line: string) => {
    const cells = line.replace(/^\| | \|$/g, '').split(' | ');
    return `| ${cells.filter((_, i) => keep[i]).join(' | ')} |`;
  };
  const lines = full.map((l, i) => (i === 1 ? `|---|${head.slice(1).filter((_, k) => keep[k + 1]).map(() => '---:').join('|')}|` : cut(l)));
  return [START, '', `Forward, float32, per call — ${machine(run)} Every figure, the backward and the browser: [benchmarks](docs/benchmarks.md).`, '', ...lines, '', END].join('\n');
}

/** The README with its results block replaced by {@link renderReadmeResults}. */
export function readmeWithResults(readme: string): string {
  return withBlocks(README_MD, readme);
}

/** docs/performance.md, whose one-off section is generated from one-off-browser.json. */
export const PERFORMANCE_MD = fileURLToPath(new URL('../docs/performance.md', import.meta.url));
const ONE_OFF_START = '<!-- one-off:start (generated by bench/docs.ts) -->';
const ONE_OFF_END = '<!-- one-off:end -->';

/**
 * Per engine, how the default call compares with the plain-JS loop and what bounds it: the
 * share of its time that is the engine's own new array written once, and the ratio the call
 * would reach if everything but that array were free.
 */
function renderOneOffFloor(): string {
  const json = read<OneOffJson>('one-off-browser.json');
  if (!json) return '';
  const lines = [
    `Measured by \`npm run bench:browser\` (${json.date.slice(0, 10)}; every piece in [benchmarks](benchmarks.md#what-the-one-off-call-costs-in-a-page)):`,
    '',
    '| engine | rows × dim | default call ÷ plain JS | layer ÷ plain JS | the new array, written once: share of the default call | best possible default ÷ plain JS |',
    '|---|---|---:|---:|---:|---:|',
  ];
  for (const [e, r] of Object.entries(json.engines)) {
    for (const row of r.rows) {
      const u = row.us;
      const x = (v: number) => `${v.toFixed(2)}×`;
      lines.push(
        `| ${ENGINE_TITLES[e] ?? e} | ${row.shape.replace('x', ' × ')} | ${x(u.plainJs! / u.default!)} | ${x(u.plainJs! / u.layer!)} | ` +
          `${Math.min(100, (100 * u.newWrite!) / u.default!).toFixed(0)}% | ${x(u.plainJs! / u.newWrite!)} |`,
      );
    }
  }
  return [ONE_OFF_START, '', ...lines, '', ONE_OFF_END].join('\n');
}

const COLD_START = '<!-- cold-start:start (generated by bench/docs.ts) -->';
const COLD_END = '<!-- cold-start:end -->';

/** A cold start as bench/cold-start.ts and demo/bench-browser.ts write it. */
interface ColdStartJson {
  dim: number;
  rounds: number;
  rows: { name: string; ms?: number; importMs?: number; initMs?: number; firstCallMs?: number; totalMs?: number }[];
}

/**
 * From a program's first `import` to its first result: in Node (latest.json), each part, and in
 * each browser engine (browser-ENGINE.json), a page's whole time. Runs against another build of
 * the package (a `--baseline` run's rows) are for the one who ran them, not for this page.
 */
function renderColdStart(): string {
  const node = read<RunJson & { coldStart?: ColdStartJson }>('latest.json');
  const ms = (v: number) => `${v.toFixed(1)} ms`;
  const ours = (r: { name: string }) => !r.name.includes('(');
  const lines: string[] = [];
  if (node?.coldStart) {
    const c = node.coldStart;
    lines.push(
      `In Node: fresh processes, each timing itself from its first \`import\` (Node's own start-up not included), one row of ${c.dim}; medians of ${c.rounds} rounds, ${machine(node)}`,
      '',
      '| program | import | init (compile, or the session) | first call | to the first result |',
      '|---|---:|---:|---:|---:|',
      ...c.rows.filter(ours).map((r) => `| ${r.name} | ${ms(r.importMs!)} | ${ms(r.initMs!)} | ${ms(r.firstCallMs!)} | ${ms(r.totalMs!)} |`),
      '',
    );
  }
  const pages = Object.keys(ENGINE_TITLES).flatMap((e) => {
    const run = read<RunJson & { coldStart?: ColdStartJson }>(`browser-${e}.json`);
    return run?.coldStart && run.browser ? [[e, run] as const] : [];
  });
  if (pages.length > 0) {
    const names = pages[0]![1].coldStart!.rows.filter(ours).map((r) => r.name);
    lines.push(
      `In a page: from the start of its script to the first result, fetch of every file from a local server included, nothing cached (a new page each time, \`Cache-Control: no-store\`), one row of ${pages[0]![1].coldStart!.dim}; medians of ${pages[0]![1].coldStart!.rounds} loads (\`npm run bench:browser\`, ${pages[0]![1].date.slice(0, 10)}):`,
      '',
      `| engine | ${names.join(' | ')} |`,
      `|---|${names.map(() => '---:').join('|')}|`,
      ...pages.map(([e, run]) => `| ${ENGINE_TITLES[e]} ${run.browser!.version} | ${names.map((n) => ms(run.coldStart!.rows.find((r) => r.name === n)!.ms!)).join(' | ')} |`),
      '',
    );
  }
  return [COLD_START, '', ...lines, COLD_END].join('\n');
}

/** `md` with the block between `start` and `end` replaced by `render()`'s. */
function withBlock(md: string, start: string, end: string, render: () => string): string {
  const i = md.indexOf(start);
  const j = md.indexOf(end);
  if (i < 0 || j < i) return md;
  return md.slice(0, i) + render() + md.slice(j + end.length);
}

/** docs/web-app.md, whose sentence on what a Vite build emits is generated from size.json. */
export const WEB_APP_MD = fileURLToPath(new URL('../docs/web-app.md', import.meta.url));
const BUILDS_START = '<!-- builds:start (generated by bench/docs.ts) -->';
const BUILDS_END = '<!-- builds:end -->';

/** What `vite build` emits of the package: its builds by name, their sizes on disk and gzipped. */
function renderViteBuilds(): string {
  const json = read<SizeJson>('size.json');
  if (!json) return '';
  const names = Object.keys(json.builds);
  const plain = names.filter((n) => !n.endsWith('-threads'));
  const threads = names.filter((n) => n.endsWith('-threads'));
  const code = (n: string) => `\`${n}\``;
  const total = (k: 'bytes' | 'gzipBytes') => names.reduce((a, n) => a + json.builds[n]!.wasm[k], 0);
  const kib = (n: number) => `${Math.round(n / 1024)} KiB`;
  const largest = Math.max(...names.map((n) => json.builds[n]!.wasm.gzipBytes));
  return [
    BUILDS_START,
    `\`vite build\` emits the package's ${names.length} \`.wasm\` builds (${plain.map(code).join(', ')}, and the threads builds ${threads.map(code).join(' and ')}; ` +
      `${kib(total('bytes'))} on disk together) and the worker as separate files under \`dist/assets/\`; a page downloads only what it uses: one build ` +
      `for \`init()\` (at most ${kib(largest)} gzipped), and one threads build more once it creates a pool.`,
    BUILDS_END,
  ].join('\n');
}

/** docs/files.md, whose list of exit codes is the command's own (exit-codes.ts). */
export const FILES_MD = fileURLToPath(new URL('../docs/files.md', import.meta.url));
const EXIT_START = '<!-- exit-codes:start (generated by bench/docs.ts) -->';
const EXIT_END = '<!-- exit-codes:end -->';

/** The exit codes as docs/files.md lists them: the text `--help` ends with. */
function renderExitCodes(): string {
  const [, codes] = /^Exit codes: (.*)$/s.exec(EXIT_CODES_TEXT.replaceAll('\u00a0', ' '))!;
  return [EXIT_START, `- **Exit codes.** ${codes}`, EXIT_END].join('\n');
}

/**
 * The generated blocks of the pages beside docs/benchmarks.md, by page: each between its start
 * and end markers, rendered from the results. Writing and checking them both go by this list.
 */
const BLOCKS: ReadonlyMap<string, readonly (readonly [string, string, () => string])[]> = new Map([
  [README_MD, [[START, END, renderReadmeResults], [OPTIONS_START, OPTIONS_END, renderApiOptions]]],
  [PERFORMANCE_MD, [[ONE_OFF_START, ONE_OFF_END, renderOneOffFloor], [COLD_START, COLD_END, renderColdStart]]],
  [WEB_APP_MD, [[BUILDS_START, BUILDS_END, renderViteBuilds]]],
  [FILES_MD, [[EXIT_START, EXIT_END, renderExitCodes]]],
]);

/** Page `path`'s text `md` with its generated blocks up to date. */
function withBlocks(path: string, md: string): string {
  return BLOCKS.get(path)!.reduce((t, [start, end, render]) => withBlock(t, start, end, render), md);
}

/** docs/performance.md with its generated sections up to date. */
export function performanceWithOneOff(md: string): string {
  return withBlocks(PERFORMANCE_MD, md);
}

/** Writes docs/benchmarks.md and the generated blocks of the other pages from the results. */
export function writeBenchmarks(): void {
  writeFileSync(BENCHMARKS_MD, renderBenchmarks());
  for (const path of BLOCKS.keys()) writeFileSync(path, withBlocks(path, readFileSync(path, 'utf8')));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes('--check')) {
    // Each page must have its blocks' markers (a block whose markers went missing would
    // otherwise pass unseen) and their text as the results make it.
    const pageOk = (path: string) => {
      const md = readFileSync(path, 'utf8');
      return BLOCKS.get(path)!.every(([start, end]) => md.includes(start) && md.includes(end)) && md === withBlocks(path, md);
    };
    const same = existsSync(BENCHMARKS_MD) && readFileSync(BENCHMARKS_MD, 'utf8') === renderBenchmarks() && [...BLOCKS.keys()].every(pageOk);
    if (!same) {
      process.stderr.write('docs/benchmarks.md, the README\'s results or the generated parts of docs/ differ from what bench/results/*.json make: run `tsx bench/docs.ts`\n');
      process.exit(1);
    }
  } else writeBenchmarks();
}
