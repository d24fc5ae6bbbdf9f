/**
 * The package under Bun, Deno and Node, with and without relaxed SIMD (pinned devDependencies,
 * installed from npm by scripts/setup.sh): test/engines/run-checks.mjs runs
 * fixtures/engine-checks.js on the built package in each engine: the sync API on every build
 * the engine runs and the pool (threads mode: every engine here has worker_threads and
 * SharedArrayBuffer), float32 and half precision. Each run is checked against the float64
 * reference in the script, and its result hashes must equal Node's. Nothing may be written to
 * stderr (an uncaught error inside a pool worker does not fail the script's exit code, only its
 * stderr: Deno's worker_threads once had no `parentPort.close()`).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, test } from 'vitest';
import { expectEngineChecksPass, type EngineSummary } from './browser/expect-checks.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SCRIPT = join(ROOT, 'test', 'engines', 'run-checks.mjs');
const BIN = join(ROOT, 'node_modules', '.bin');
const run = promisify(execFile);

/** Command lines per engine; Deno may read the package's files and the environment, nothing else. */
const ENGINES: Record<string, { cmd: string; args: string[] }> = {
  node: { cmd: process.execPath, args: [SCRIPT] },
  // Node 20 has relaxed SIMD behind this flag (Node 22 by default)
  'node-relaxed': { cmd: process.execPath, args: ['--experimental-wasm-relaxed-simd', SCRIPT] },
  bun: { cmd: join(BIN, 'bun'), args: [SCRIPT] },
  deno: { cmd: join(BIN, 'deno'), args: ['run', `--allow-read=${ROOT}`, '--allow-env', '--no-prompt', SCRIPT] },
};

const results: Record<string, EngineSummary & { stderr: string }> = {};

beforeAll(async () => {
  await Promise.all(
    Object.entries(ENGINES).map(async ([name, { cmd, args }]) => {
      const { stdout, stderr } = await run(cmd, args, {
        cwd: ROOT,
        timeout: 90_000,
        // NO_COLOR: Deno colours its diagnostics; npm_*: an enclosing `npm test` leaks its config
        env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('npm_'))), NO_COLOR: '1' },
      });
      results[name] = { ...(JSON.parse(stdout.trim().split('\n').at(-1)!) as EngineSummary), stderr };
    }),
  );
}, 120_000);

describe('Bun, Deno and Node with relaxed SIMD give the same bits as Node', () => {
  test('the engines are the pinned versions', async () => {
    const pkg = (await import('../package.json', { with: { type: 'json' } })).default as { devDependencies: Record<string, string> };
    expect(results.bun!.engine).toBe(`bun ${pkg.devDependencies.bun}`);
    expect(results.deno!.engine).toBe(`deno ${pkg.devDependencies.deno}`);
    expect(results.node!.engine).toBe(`node ${process.version}`);
  });

  test('relaxed SIMD: Deno, Bun and Node with the flag have it; Node 20 without it does not', () => {
    expect(results.deno!.relaxed).toBe(true);
    expect(results.bun!.relaxed).toBe(true);
    expect(results['node-relaxed']!.relaxed).toBe(true);
    expect(results.node!.relaxed).toBe(Number(process.versions.node.split('.')[0]) >= 22);
  });

  test.each(Object.keys(ENGINES))('%s: every build it runs, sync API and pool, within tolerance and bit-identical to Node; nothing on stderr', (name) => {
    const r = results[name]!;
    expect(r.stderr).toBe('');
    expectEngineChecksPass(r, results.node!);
  });
});
