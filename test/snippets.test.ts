/**
 * The code a user copies from the README and docs/ runs as written: every ```js block that
 * imports the package is run by Node as a module, and every `npx rmsnorm-wasm` line of a ```sh
 * block by the command, in a folder with the package installed (linked) and the data files the
 * examples name (rows of 4096). A snippet that stops working fails here. The same blocks also
 * compile as TypeScript under `strict` against the published types, as in a user's strict
 * project (a page's and Node's libs): a snippet that only runs because JavaScript does not
 * check (a possibly-null result used as it is) fails too.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { npyHeader } from '../dist/node/index.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const PAGES = ['README.md', ...readdirSync(join(REPO, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

interface Snippet {
  page: string;
  index: number;
  lang: string;
  code: string;
}

/** The fenced blocks of `page` in `langs`. */
function blocks(page: string, langs: string[]): Snippet[] {
  const text = readFileSync(join(REPO, page), 'utf8');
  const out: Snippet[] = [];
  const re = /^```(\w*)\n([\s\S]*?)^```/gm;
  let m: RegExpExecArray | null;
  let index = 0;
  while ((m = re.exec(text)) !== null) {
    index++;
    if (langs.includes(m[1]!)) out.push({ page, index, lang: m[1]!, code: m[2]! });
  }
  return out;
}

const js = PAGES.flatMap((p) => blocks(p, ['js'])).filter((s) => /from 'rmsnorm-wasm(\/node)?'/.test(s.code));
const commands = PAGES.flatMap((p) => blocks(p, ['sh']))
  .flatMap((s) => s.code.split('\n').map((line) => ({ ...s, code: line.replace(/\s+#.*$/, '').trim() })))
  .filter((s) => s.code.startsWith('npx rmsnorm-wasm '));

const dir = mkdtempSync(join(tmpdir(), 'rmsnorm-wasm-snippets-'));
mkdirSync(join(dir, 'node_modules'));
symlinkSync(REPO, join(dir, 'node_modules', 'rmsnorm-wasm'), 'dir');
writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
// The data files the examples name: 8 rows of 4096.
const ROWS = 8;
const DIM = 4096;
const rowsF32 = new Float32Array(ROWS * DIM).map((_, i) => Math.sin(i));
const npy = (shape: number[], data: Float32Array) => Buffer.concat([Buffer.from(npyHeader(shape)), Buffer.from(data.buffer)]);
writeFileSync(join(dir, 'acts.npy'), npy([ROWS, DIM], rowsF32));
writeFileSync(join(dir, 'w.npy'), npy([DIM], new Float32Array(DIM).fill(1)));
for (const f of ['acts.f32', 'in.f32']) writeFileSync(join(dir, f), Buffer.from(rowsF32.buffer));
writeFileSync(join(dir, 'acts.bf16'), Buffer.alloc(ROWS * DIM * 2, 0x3f));
const tensorsHeader = Buffer.from(JSON.stringify({ acts: { dtype: 'F32', shape: [ROWS, DIM], data_offsets: [0, ROWS * DIM * 4] } }).padEnd(80, ' '));
const headerLength = Buffer.alloc(8);
headerLength.writeBigUInt64LE(BigInt(tensorsHeader.length));
writeFileSync(join(dir, 'acts.safetensors'), Buffer.concat([headerLength, tensorsHeader, Buffer.from(rowsF32.buffer)]));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = promisify(execFile);

describe('the code blocks of the README and docs/ run as written', () => {
  it('finds the blocks (the README has its quick start and the four ways to call)', () => {
    expect(js.filter((s) => s.page === 'README.md').length).toBeGreaterThanOrEqual(4);
    expect(commands.filter((s) => s.page === 'README.md').length).toBeGreaterThanOrEqual(2);
  });

  it.each(js.map((s) => [`${s.page} block ${s.index}`, s] as const))('%s', async (_name, s) => {
    const file = join(dir, `${s.page.replace(/\W/g, '_')}_${s.index}.mjs`);
    writeFileSync(file, s.code);
    await expect(run(process.execPath, [file], { cwd: dir, timeout: 60_000 })).resolves.toBeDefined();
  }, 60_000);

  it('they compile as TypeScript under strict against the published types', async () => {
    const files = js.map((s) => {
      const f = `${s.page.replace(/\W/g, '_')}_${s.index}.ts`;
      writeFileSync(join(dir, f), s.code);
      return f;
    });
    const compilerOptions = {
      target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['es2022', 'dom'], types: ['node'],
      typeRoots: [join(REPO, 'node_modules', '@types')], strict: true, noEmit: true, skipLibCheck: false,
    };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files }));
    // The check is real: a made-up snippet using a possibly-null result fails it.
    writeFileSync(join(dir, 'made-up.ts'), "import { rmsNormBackward } from 'rmsnorm-wasm';\nconsole.log(rmsNormBackward(new Float32Array(4), new Float32Array(4), null, { dim: 4 }).dweight.length);\n");
    writeFileSync(join(dir, 'made-up.json'), JSON.stringify({ compilerOptions, files: ['made-up.ts'] }));
    const tsc = (config: string) =>
      run(process.execPath, [join(REPO, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', config], { cwd: dir, timeout: 120_000 }).then(
        () => '',
        (e: { stdout?: string }) => String(e.stdout ?? e),
      );
    expect(await tsc('made-up.json')).toMatch(/possibly 'null'/);
    expect(await tsc('tsconfig.json')).toBe('');
  }, 120_000);

  it.each(commands.map((s) => [`${s.page}: ${s.code}`, s] as const))('%s', async (_name, s) => {
    const bin = join(REPO, 'bundle', 'node', 'bin.js');
    const args = s.code.replace(/^npx rmsnorm-wasm /, '').split(/\s+/);
    const r = await run(process.execPath, [bin, ...args], { cwd: dir, timeout: 60_000 });
    expect(r.stdout.length).toBeGreaterThan(0);
  }, 60_000);
});
