/**
 * Every program in examples/ runs as a user would run it after `npm install rmsnorm-wasm`: in a
 * folder of its own with the package linked into node_modules (and its command into
 * node_modules/.bin), `node example.mjs`, exit code 0. The training example exits non-zero
 * unless its loss falls a hundredfold.
 */
import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const EXAMPLES = join(REPO, 'examples');
const files = readdirSync(EXAMPLES).filter((f) => f.endsWith('.mjs'));

const dir = mkdtempSync(join(tmpdir(), 'rmsnorm-wasm-examples-'));
mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
symlinkSync(REPO, join(dir, 'node_modules', 'rmsnorm-wasm'), 'dir');
// What npm install makes of package.json's "bin".
const bin = join(dir, 'node_modules', '.bin', 'rmsnorm-wasm');
writeFileSync(bin, `#!/bin/sh\nexec "${process.execPath}" "${join(REPO, 'bundle', 'node', 'bin.js')}" "$@"\n`);
chmodSync(bin, 0o755);
writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
for (const f of files) copyFileSync(join(EXAMPLES, f), join(dir, f));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('examples/', () => {
  it('has the programs the README points to', () => {
    for (const f of ['one-off.mjs', 'layer-loop.mjs', 'decoder.mjs', 'training-step.mjs', 'zero-copy.mjs', 'pool.mjs', 'half-precision.mjs', 'variants.mjs', 'cli.mjs']) {
      expect(files).toContain(f);
    }
  });

  it.each(files)('%s runs', async (f) => {
    const env = { ...process.env, PATH: `${join(dir, 'node_modules', '.bin')}:${process.env.PATH}` };
    const r = await promisify(execFile)(process.execPath, [f], { cwd: dir, env, timeout: 120_000 });
    expect(r.stdout.length).toBeGreaterThan(0);
  }, 120_000);
});
