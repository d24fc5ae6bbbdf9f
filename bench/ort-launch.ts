/**
 * Runs the onnxruntime contenders in child processes (see ort-child.ts) and collects their rows.
 * @module
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Row, Shape } from './types.js';

/** What one child measures. */
export interface OrtChildSpec {
  engine: 'web' | 'node';
  /** web: `env.wasm.numThreads`; node: the largest `intraOpNumThreads` (1 is also run). */
  threads: number;
  shapes: Shape[];
  quick: boolean;
  /** Where the child writes its rows (JSON). */
  out: string;
}

const CHILD = fileURLToPath(new URL('./ort-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Runs one child to completion and returns its rows. Rejects (with the exit code) if the
 * child fails; its stderr (progress lines, onnxruntime warnings) goes to ours.
 */
export async function runOrtChild(spec: Omit<OrtChildSpec, 'out'>): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'rmsnorm-bench-ort-'));
  const out = join(dir, 'rows.json');
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      // tsx's loader is resolved from the repository root, where it is installed.
      const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify({ ...spec, out })], {
        cwd: ROOT,
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      child.on('error', reject);
      child.on('exit', resolve);
    });
    if (code !== 0) throw new Error(`onnxruntime ${spec.engine} child (threads ${spec.threads}) exited with code ${code}`);
    return JSON.parse(readFileSync(out, 'utf8')) as Row[];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
