/**
 * A program's cold start in Node, measured where it pays it: fresh processes, each timing from
 * inside itself (bench/cold-start-child.mjs) how long it takes from its first `import` to a first
 * result — for this package `import` + `init()` + one `rmsNorm(x, w)`, for onnxruntime-node and
 * onnxruntime-web its import, session creation and one `run` — in rounds that alternate the
 * contenders, keeping the median of each part. `npm run bench` runs it; `--baseline DIR` adds
 * the package as built in another checkout (DIR, with its own build done), for an A/B.
 * @module
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildNormModel, RMS_NORMALIZATION, SIMPLIFIED_LAYER_NORM } from './onnx-model.js';

const CHILD = fileURLToPath(new URL('./cold-start-child.mjs', import.meta.url));
const REPO = fileURLToPath(new URL('..', import.meta.url));

/** The medians of one contender's cold starts, ms. */
export interface ColdStart {
  name: string;
  importMs: number;
  initMs: number;
  firstCallMs: number;
  totalMs: number;
}

/** The file a package's main entry (`exports["."]`) points at, in the checkout `dir`. */
export function mainEntry(dir: string): string {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { exports: { '.': { default: string } } };
  return join(dir, pkg.exports['.'].default);
}

const median = (a: number[]) => [...a].sort((p, q) => p - q)[Math.floor(a.length / 2)]!;

/**
 * `rounds` cold starts of this package (and of `baseline`'s, when given) and of onnxruntime,
 * at one row of `dim`, alternating; medians per contender.
 */
export function coldStarts(rounds: number, dim: number, baseline?: string): ColdStart[] {
  const dir = mkdtempSync(join(tmpdir(), 'rmsnorm-cold-'));
  try {
    const w = new Float32Array(dim).fill(1.25);
    const web = join(dir, 'rms.onnx');
    const node = join(dir, 'simplified.onnx');
    writeFileSync(web, buildNormModel(1, dim, w, 1e-6, RMS_NORMALIZATION));
    writeFileSync(node, buildNormModel(1, dim, w, 1e-6, SIMPLIFIED_LAYER_NORM));
    const runs: [string, string[]][] = [
      ['rmsnorm-wasm', ['entry', mainEntry(REPO)]],
      ...(baseline ? [['rmsnorm-wasm (baseline)', ['entry', mainEntry(baseline)]] as [string, string[]]] : []),
      ['onnxruntime-web', ['ort-web', web]],
      ['onnxruntime-node', ['ort-node', node]],
    ];
    const got = new Map<string, Omit<ColdStart, 'name'>[]>();
    for (let r = 0; r < rounds; r++) {
      for (const [name, args] of runs) {
        const out = execFileSync(process.execPath, [CHILD, ...args, String(dim)], { cwd: REPO, encoding: 'utf8' });
        const t = JSON.parse(out.trim().split('\n').at(-1)!) as Omit<ColdStart, 'name'> & { ok: boolean };
        if (!t.ok) throw new Error(`${name}: the first result is not the normalized row`);
        got.set(name, [...(got.get(name) ?? []), t]);
      }
    }
    return runs.map(([name]) => {
      const ts = got.get(name)!;
      const m = (k: keyof Omit<ColdStart, 'name'>) => Math.round(median(ts.map((t) => t[k])) * 100) / 100;
      return { name, importMs: m('importMs'), initMs: m('initMs'), firstCallMs: m('firstCallMs'), totalMs: m('totalMs') };
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const i = process.argv.indexOf('--baseline');
  for (const c of coldStarts(Number(process.env.ROUNDS ?? 7), 896, i > 0 ? process.argv[i + 1] : undefined)) console.log(JSON.stringify(c));
}
