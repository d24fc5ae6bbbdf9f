/**
 * The benchmark's --quick run: it must finish, write well-formed JSON and SVG to the directory
 * given by --out (never over bench/results), and every contender must have passed its float64
 * correctness check and been timed. Timings themselves are not asserted (too noisy here).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const COMMITTED = join(ROOT, 'bench', 'results', 'latest.json');

interface BenchJson {
  machine: { cpu: string; cores: number; memoryGB: number };
  node: string;
  v8: string;
  date: string;
  quick: boolean;
  shapes: string[];
  tolerance: { atol: number; rtol: number };
  comparisons: { id: string; text: string; shapes: { shape: string; ratio: number }[] }[];
  coldStart: { dim: number; rounds: number; rows: { name: string; importMs: number; initMs: number; firstCallMs: number; totalMs: number }[] };
  summary: string;
  rows: Record<string, unknown>[];
}

const ROW_FIELDS: Record<string, 'string' | 'number' | 'boolean' | 'object'> = {
  shape: 'string', rows: 'number', dim: 'number', op: 'string', contender: 'string', family: 'string',
  threads: 'number', zeroCopy: 'boolean', bytesPerElem: 'number', check: 'object', medianMs: 'number',
  meanMs: 'number', rmePct: 'number', samples: 'number', gelemPerS: 'number', gbPerS: 'number', batch: 'number',
};

describe('npm run bench -- --quick', () => {
  let dir = '';
  let json: BenchJson;
  let stdout = '';
  let committedMtime: number | null = null;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rmsnorm-bench-test-'));
    committedMtime = existsSync(COMMITTED) ? statSync(COMMITTED).mtimeMs : null;
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'run.ts'), '--quick', '--out', dir], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 170_000,
    });
    stdout = r.stdout;
    if (r.status !== 0) throw new Error(`bench exited with ${r.status}:\n${r.stderr}`);
    json = JSON.parse(readFileSync(join(dir, 'latest.json'), 'utf8')) as BenchJson;
  }, 180_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('records the machine, runtime versions and date', () => {
    expect(json.quick).toBe(true);
    expect(json.machine.cpu.length).toBeGreaterThan(0);
    expect(json.machine.cores).toBeGreaterThanOrEqual(1);
    expect(json.machine.memoryGB).toBeGreaterThan(0);
    expect(json.node).toBe(process.versions.node);
    expect(json.v8).toBe(process.versions.v8);
    expect(Number.isNaN(Date.parse(json.date))).toBe(false);
    expect(json.tolerance).toMatchObject({ atol: 1e-4, rtol: 1e-4 });
  });

  it('has every field in every row, every check passed and every row timed', () => {
    expect(json.rows.length).toBeGreaterThan(0);
    for (const row of json.rows) {
      const where = `${String(row.op)} ${String(row.contender)} @${String(row.shape)}`;
      for (const [k, type] of Object.entries(ROW_FIELDS)) expect(typeof row[k], `${where}: ${k}`).toBe(type);
      const check = row.check as { passed: boolean; maxAbsErr: number; worstToTolerance: number };
      expect(check.passed, `${where}: ${JSON.stringify(check)}`).toBe(true);
      expect(check.worstToTolerance).toBeLessThanOrEqual(1);
      expect(row.error, where).toBeNull();
      expect(row.medianMs as number, where).toBeGreaterThan(0);
      expect(json.shapes).toContain(row.shape);
    }
  });

  it('covers every contender family on every shape', () => {
    const expected = [
      ['forward', 'js-naive'], ['forward', 'js-naive-new'], ['forward', 'js-optimized'], ['forward', 'wasm-scalar'], ['forward', 'wasm-simd'],
      ['forward', 'wasm-simd-zero-copy'], ['backward', 'js-naive'], ['backward', 'js-optimized'],
      ['backward', 'wasm-scalar'], ['backward', 'wasm-simd'], ['backward', 'wasm-simd-zero-copy'],
      ['copy', 'copy'], ['copy', 'memcpy'], ['layernorm', 'layernorm-wasm-simd-zero-copy'],
      ['forward', 'ort-web-1t'], ['forward', 'ort-node-1t'], ['forward', 'pool-1'], ['forward', 'pool-1-zero-copy'],
      ['backward', 'pool-1'], ['backward', 'pool-1-zero-copy'],
    ];
    for (const shape of json.shapes) {
      for (const [op, name] of expected) {
        expect(json.rows.some((r) => r.shape === shape && r.op === op && r.contender === name), `${op} ${name} @${shape}`).toBe(true);
      }
    }
  });

  it('derives ratios against js-naive and copy', () => {
    for (const row of json.rows.filter((r) => r.op === 'forward' || r.op === 'backward')) {
      expect(typeof row.vsNaive).toBe('number');
      expect(typeof row.pctOfCopy).toBe('number');
    }
    const naive = json.rows.find((r) => r.contender === 'js-naive' && r.op === 'forward')!;
    expect(naive.vsNaive).toBe(1);
  });

  it('states the comparisons as ratios (no verdicts) and prints tables and a summary', () => {
    expect(json.comparisons.length).toBeGreaterThanOrEqual(9);
    for (const c of json.comparisons) for (const x of c.shapes) expect(x.ratio).toBeGreaterThan(0);
    expect(json.comparisons.find((c) => c.id === 'default-js')!.shapes.length).toBe(json.shapes.length);
    expect(stdout + JSON.stringify(json)).not.toMatch(/\b(MISSED|MET)\b|issue \d|goal/i);
    expect(json.summary).toMatch(/passed the float64 check/);
    for (const s of json.shapes) expect(stdout).toContain(`== ${s}`);
    expect(stdout).toMatch(/Summary: /);
  });

  it('times the cold start of this package and of onnxruntime in fresh processes, each checked', () => {
    const cold = json.coldStart;
    expect(cold.rows.map((r) => r.name)).toEqual(['rmsnorm-wasm', 'onnxruntime-web', 'onnxruntime-node']);
    for (const r of cold.rows) {
      for (const k of ['importMs', 'initMs', 'firstCallMs'] as const) expect(r[k], `${r.name} ${k}`).toBeGreaterThan(0);
      expect(r.totalMs).toBeGreaterThanOrEqual(r.importMs);
    }
  });

  it('writes an SVG chart next to the JSON and leaves the committed results alone', () => {
    const svg = readFileSync(join(dir, 'latest.svg'), 'utf8');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).toContain('Gelem/s (log scale)');
    expect(committedMtime === null ? existsSync(COMMITTED) : statSync(COMMITTED).mtimeMs).toBe(committedMtime ?? false);
  });
});
