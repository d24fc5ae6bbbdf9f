/**
 * Issue 5: what `npm pack` ships. Everything a user needs (JS, type declarations, the pool's
 * worker script, all three wasm builds with their glue, README, LICENSE) and nothing else.
 * Source maps are shipped together with the TypeScript sources they point to (ts/), so every
 * map resolves. publint (strict: warnings fail too) and attw (profile `esm-only`: the package
 * is ESM-only by design, so the CommonJS `require` rows are ignored) must report no problems.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { packRepo, REPO, run, type Packed } from './pack.js';

const BUILDS = ['simd', 'simd-threads', 'scalar'] as const;
const WASM_FILES = ['rmsnorm_wasm.js', 'rmsnorm_wasm.d.ts', 'rmsnorm_wasm_bg.wasm', 'rmsnorm_wasm_bg.wasm.d.ts'];

/** Files that must be in the tarball. */
const REQUIRED = [
  'package.json',
  'README.md',
  'LICENSE',
  'dist/index.js',
  'dist/index.d.ts',
  'dist/pool/worker.js',
  ...BUILDS.flatMap((b) => WASM_FILES.map((f) => `wasm/${b}/${f}`)),
];

/** Everything the tarball may contain; anything else (tests, bench, crate, results) is a leak. */
const ALLOWED: RegExp[] = [
  /^package\.json$/,
  /^README\.md$/,
  /^LICENSE$/,
  /^dist\/(?:[\w-]+\/)*[\w.-]+\.(?:js|d\.ts|js\.map)$/,
  /^ts\/(?:[\w-]+\/)*[\w.-]+(?<!\.test)\.ts$/,
  new RegExp(`^wasm/(?:${BUILDS.join('|')})/(?:${WASM_FILES.map((f) => f.replace(/\./g, '\\.')).join('|')})$`),
];

let packed: Packed;
let unpacked: string;

beforeAll(async () => {
  packed = await packRepo();
  unpacked = join(packed.dir, 'unpacked');
  await mkdir(unpacked);
  await run('tar', ['-xzf', packed.tarball, '-C', unpacked, '--strip-components=1']);
}, 120_000);

afterAll(async () => {
  await packed?.cleanup();
});

describe('npm pack', () => {
  test('contains every file a user needs', () => {
    const missing = REQUIRED.filter((f) => !packed.files.includes(f));
    expect(missing).toEqual([]);
  });

  test('contains nothing else', () => {
    const extra = packed.files.filter((f) => !ALLOWED.some((re) => re.test(f)));
    expect(extra).toEqual([]);
  });

  test('every compiled module has its type declarations', () => {
    const js = packed.files.filter((f) => f.startsWith('dist/') && f.endsWith('.js'));
    expect(js.length).toBeGreaterThan(3);
    expect(js.filter((f) => !packed.files.includes(f.replace(/\.js$/, '.d.ts')))).toEqual([]);
  });

  test('every source map resolves to a shipped source, every sourceMappingURL to a shipped map', async () => {
    const broken: string[] = [];
    for (const f of packed.files.filter((p) => p.endsWith('.js'))) {
      const text = await readFile(join(unpacked, f), 'utf8');
      const m = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(text);
      if (!m) continue;
      const map = posix.join(posix.dirname(f), m[1]!);
      if (!packed.files.includes(map)) broken.push(`${f} -> ${map}`);
    }
    for (const f of packed.files.filter((p) => p.endsWith('.map'))) {
      const map = JSON.parse(await readFile(join(unpacked, f), 'utf8')) as { sources: string[]; sourceRoot?: string };
      for (const s of map.sources) {
        const src = posix.normalize(posix.join(posix.dirname(f), map.sourceRoot ?? '', s));
        if (!packed.files.includes(src)) broken.push(`${f} -> ${src}`);
      }
    }
    expect(broken).toEqual([]);
  });

  test('the published types are the public API: no benchmark-only or internal members', async () => {
    const dts = packed.files.filter((f) => f.endsWith('.d.ts') && f.startsWith('dist/'));
    const leaks: string[] = [];
    for (const f of dts) {
      const text = await readFile(join(unpacked, f), 'utf8');
      // (private members are printed without their types, as `private readonly heap;`: not API)
      for (const re of [/layerNorm/, /copyInWasm/, /layer_norm_forward/, /copy_f32/, /forwardChecked/, /backwardChecked/, /(?<!private )readonly heap\b/]) {
        if (re.test(text)) leaks.push(`${f}: ${re.source}`);
      }
    }
    // the shipped wasm builds do not export the benchmark's kernels either
    for (const b of BUILDS) {
      const glue = await readFile(join(unpacked, `wasm/${b}/rmsnorm_wasm.js`), 'utf8');
      if (/layer_norm_forward|copy_f32/.test(glue)) leaks.push(`wasm/${b}/rmsnorm_wasm.js exports a benchmark kernel`);
    }
    expect(leaks).toEqual([]);
  });

  test('package.json points at shipped files', async () => {
    const pkg = JSON.parse(await readFile(join(unpacked, 'package.json'), 'utf8')) as {
      type: string;
      license: string;
      exports: Record<string, { types: string; default: string } | string>;
    };
    expect(pkg.type).toBe('module');
    // whatever dist/ or wasm/ a checkout has lying around, packing builds them afresh first
    expect((pkg as unknown as { scripts: Record<string, string> }).scripts.prepack).toBe('npm run build');
    expect(pkg.license).toBe('MIT');
    const main = pkg.exports['.'] as { types: string; default: string };
    for (const p of [main.types, main.default]) expect(packed.files).toContain(posix.normalize(p));
  });

  test('publint --strict reports nothing', async () => {
    const bin = join(REPO, 'node_modules', 'publint', 'src', 'cli.js');
    const { stdout } = await run(process.execPath, [bin, 'run', packed.tarball, '--strict', '--level', 'suggestion'], {
      cwd: dirname(packed.tarball),
      timeout: 60_000,
    });
    expect(stdout).toMatch(/All good!/);
  }, 60_000);

  test('attw (esm-only profile) reports no problems', async () => {
    const bin = join(REPO, 'node_modules', '@arethetypeswrong', 'cli', 'dist', 'index.js');
    const res = await run(process.execPath, [bin, packed.tarball, '--profile', 'esm-only', '--format', 'json'], {
      cwd: dirname(packed.tarball),
      timeout: 60_000,
      maxBuffer: 64 << 20,
    }).catch((e: { stdout?: string; code?: number }) => ({ stdout: e.stdout ?? '', failed: e.code }));
    const report = JSON.parse(res.stdout) as {
      analysis: { problems: { kind: string; entrypoint?: string; resolutionKind?: string }[] };
    };
    // The JSON lists every problem; the esm-only profile ignores those of the node10 and
    // node16-cjs resolutions (a CommonJS `require` of an ESM-only package), and so do we.
    const ignored = new Set(['node10', 'node16-cjs']);
    const problems = report.analysis.problems.filter((p) => !ignored.has(p.resolutionKind ?? ''));
    expect(problems).toEqual([]);
    expect('failed' in res ? res.failed : 0).toBe(0);
  }, 60_000);
});
