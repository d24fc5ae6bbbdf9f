/**
 * Issue 15, item 8: the package under Bun and Deno (pinned devDependencies, installed from npm
 * by scripts/setup.sh) gives the same bits as under Node. test/engines/run-checks.mjs runs
 * fixtures/check.js on the built package in each engine: the sync API on the `simd` and the
 * `simd-threads` builds, and the pool (threads mode: both engines have worker_threads and
 * SharedArrayBuffer). Each run is checked against the float64 reference in the script, and its
 * result hashes must equal Node's. Nothing may be written to stderr (an uncaught error inside a
 * pool worker does not fail the script's exit code, only its stderr: Deno's worker_threads once
 * had no `parentPort.close()`).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, test } from 'vitest';
import { expectChecksPass, type CheckSummary } from './browser/expect-checks.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SCRIPT = join(ROOT, 'test', 'engines', 'run-checks.mjs');
const BIN = join(ROOT, 'node_modules', '.bin');
const run = promisify(execFile);

interface EngineSummary {
  engine: string;
  simd: CheckSummary;
  simdThreads: CheckSummary;
}

/** Command lines per engine; Deno may read the package's files and the environment, nothing else. */
const ENGINES: Record<string, { cmd: string; args: string[] }> = {
  node: { cmd: process.execPath, args: [SCRIPT] },
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

describe('Bun and Deno give the same bits as Node', () => {
  test('the engines are the pinned versions', async () => {
    const pkg = (await import('../package.json', { with: { type: 'json' } })).default as { devDependencies: Record<string, string> };
    expect(results.bun!.engine).toBe(`bun ${pkg.devDependencies.bun}`);
    expect(results.deno!.engine).toBe(`deno ${pkg.devDependencies.deno}`);
    expect(results.node!.engine).toBe(`node ${process.version}`);
  });

  test.each(['node', 'bun', 'deno'])('%s: sync API (simd, simd-threads) and pool (threads) within tolerance, nothing on stderr', (name) => {
    const r = results[name]!;
    expect(r.stderr).toBe('');
    expect(r.simd.build).toBe('simd');
    expect(r.simd.mode).toBe('threads');
    expectChecksPass(r.simd);
    expect(r.simdThreads.build).toBe('simd-threads');
    expectChecksPass(r.simdThreads, false);
    expect(r.simd.hash).toBe(r.simd.syncHash);
  });

  test.each(['bun', 'deno'])("%s: bit-identical to Node's results", (name) => {
    const r = results[name]!;
    const node = results.node!;
    expect(r.simd.syncHash).toBe(node.simd.syncHash);
    expect(r.simd.hash).toBe(node.simd.hash);
    expect(r.simdThreads.syncHash).toBe(node.simdThreads.syncHash);
    expect(r.simdThreads.syncHash).toBe(node.simd.syncHash);
  });
});
