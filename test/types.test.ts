/**
 * The published type declarations compile in a user's project under common configurations,
 * with `skipLibCheck: false` (so the package's own `.d.ts` files are checked too) and without
 * the `esnext.disposable` lib: a page (`es2022` + `dom`), a Node program (`es2022` +
 * @types/node, no `dom`), and a project that has `esnext.disposable` (whose declarations must
 * merge with the package's). The consumer is test/fixtures/consumer, with the package linked in
 * as `node_modules/rmsnorm-wasm`.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const TSC = join(REPO, 'node_modules', 'typescript', 'bin', 'tsc');
const dir = mkdtempSync(join(tmpdir(), 'rmsnorm-wasm-types-'));
mkdirSync(join(dir, 'node_modules'));
symlinkSync(REPO, join(dir, 'node_modules', 'rmsnorm-wasm'), 'dir');
cpSync(fileURLToPath(new URL('fixtures/consumer', import.meta.url)), dir, { recursive: true });
writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs tsc on `files` with `lib` and `types`; resolves to its output (empty when it compiles). */
async function tsc(name: string, lib: string[], types: string[], files: string[]): Promise<string> {
  const config = {
    compilerOptions: {
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      lib,
      types,
      typeRoots: [join(REPO, 'node_modules', '@types')],
      strict: true,
      noEmit: true,
      skipLibCheck: false,
    },
    files,
  };
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(config));
  try {
    await promisify(execFile)(process.execPath, [TSC, '-p', `${name}.json`], { cwd: dir, timeout: 120_000 });
    return '';
  } catch (e) {
    return String((e as { stdout?: string }).stdout ?? e);
  }
}

describe('the published types compile in a consumer project (skipLibCheck off, no esnext.disposable)', () => {
  it('a page: lib es2022 + dom', async () => {
    expect(await tsc('page', ['es2022', 'dom'], [], ['main.ts'])).toBe('');
  }, 120_000);

  it('a Node program: lib es2022 + @types/node, no dom (the main and the node entry points)', async () => {
    expect(await tsc('node', ['es2022'], ['node'], ['main.ts', 'node.ts'])).toBe('');
  }, 120_000);

  it('a project that has esnext.disposable too', async () => {
    expect(await tsc('disposable', ['es2022', 'dom', 'esnext.disposable'], ['node'], ['main.ts', 'node.ts'])).toBe('');
  }, 120_000);

  it('the API reference builds from the doc comments with no warning (an undocumented export fails: npm run docs)', async () => {
    const out = join(dir, 'api');
    const typedoc = join(REPO, 'node_modules', 'typedoc', 'bin', 'typedoc');
    const r = await promisify(execFile)(process.execPath, [typedoc, '--out', out], { cwd: REPO, timeout: 120_000 }).catch((e: { stdout?: string; code?: number }) => e);
    expect((r as { code?: number }).code ?? 0, String((r as { stdout?: string }).stdout)).toBe(0);
  }, 120_000);

  it('a mistake is still caught (the check is real)', async () => {
    writeFileSync(join(dir, 'wrong.ts'), "import { rmsNorm } from 'rmsnorm-wasm';\nconst y: string = rmsNorm(new Float32Array(4), null, { dim: 4 });\nexport { y };\n");
    expect(await tsc('wrong', ['es2022', 'dom'], [], ['wrong.ts'])).toMatch(/TS2322/);
  }, 120_000);
});
