/**
 * `npm pack` of the repository into a temporary folder, shared by the package tests.
 * @module
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The repository root (where package.json is). */
export const REPO = fileURLToPath(new URL('../..', import.meta.url));

export const run = promisify(execFile);

/** Runs `npm` with `args` in `cwd`; stderr is kept for error messages. No shell. */
export async function npm(args: string[], cwd: string, timeoutMs = 120_000): Promise<string> {
  const { stdout } = await run('npm', args, {
    cwd,
    timeout: timeoutMs,
    maxBuffer: 64 << 20,
    // npm_config_* from an enclosing `npm test` would leak into the child (e.g. its cwd prefix).
    env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_'))),
  });
  return stdout;
}

/** A packed tarball: its path, the temp folder holding it, and the file paths inside. */
export interface Packed {
  dir: string;
  tarball: string;
  files: string[];
  /** Removes `dir` (and everything made inside it). */
  cleanup(): Promise<void>;
}

/** Packs the repository as it is (build it first) into a fresh temporary folder. */
export async function packRepo(prefix = 'rmsnorm-wasm-pack-'): Promise<Packed> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  // --ignore-scripts: `npm test` has built already, and prepack's rebuild would replace dist/ and
  // wasm/ under the test files running beside this one.
  const out = await npm(['pack', '--json', '--ignore-scripts', '--pack-destination', dir], REPO);
  const info = JSON.parse(out) as { filename: string; files: { path: string }[] }[];
  const first = info[0]!;
  return {
    dir,
    tarball: join(dir, first.filename),
    files: first.files.map((f) => f.path).sort(),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}
