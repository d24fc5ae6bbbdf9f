/**
 * What `npm pack` ships: Everything a user needs (JS, type declarations, the pool's
 * worker script, every wasm build with its glue, README, LICENSE) and nothing else.
 * Source maps are shipped together with the TypeScript sources they point to (ts/), so every
 * map resolves. publint (strict: warnings fail too) and attw (profile `esm-only`: the package
 * is ESM-only by design, so the CommonJS `require` rows are ignored) must report no problems.
 *
 * How the package shows on npm and in node_modules: every file the README links to by a
 * relative path (the pages of docs/) is in the tarball, so the links work on the registry page and in node_modules; `repository` is set;
 * declaration maps ship (beside the ts/ sources they point to); `engines` states the Node
 * range where `require('rmsnorm-wasm')` works (require() of ES modules: 20.19+, 22.12+), the
 * README states the same range, and the packed entry point really loads through require().
 */
import { readFileSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BUILDS } from '../../ts/glue/load.js';
import { packRepo, REPO, run, type Packed } from './pack.js';
import { buildSizes, scriptSizes } from '../../bench/size.js';

const WASM_FILES = ['rmsnorm_wasm.js', 'rmsnorm_wasm.d.ts', 'rmsnorm_wasm_bg.wasm', 'rmsnorm_wasm_bg.wasm.d.ts'];

/** Files that must be in the tarball. */
const REQUIRED = [
  'package.json',
  'README.md',
  'LICENSE',
  'bundle/index.js',
  'bundle/node/index.js',
  'bundle/node/bin.js',
  'bundle/pool/worker/web-worker.js',
  'bundle/node/pool-worker.js',
  'dist/index.d.ts',
  'dist/node/index.d.ts',
  ...BUILDS.flatMap((b) => WASM_FILES.map((f) => `wasm/${b}/${f}`)),
];

/** Everything the tarball may contain; anything else (tests, bench, crate, results) is a leak. */
const ALLOWED: RegExp[] = [
  /^package\.json$/,
  /^README\.md$/,
  /^LICENSE$/,
  /^bundle\/(?:[\w-]+\/)*[\w.-]+\.(?:js|js\.map)$/,
  /^dist\/(?:[\w-]+\/)*[\w.-]+\.(?:d\.ts|d\.ts\.map)$/,
  // the pages the README links (see readmeLinks), and the chart docs/benchmarks.md shows
  /^docs\/[\w-]+\.md$/,
  /^bench\/results\/latest\.svg$/,
  /^ts\/(?:[\w-]+\/)*[\w.-]+(?<!\.test)\.ts$/,
  new RegExp(`^wasm/(?:${BUILDS.join('|')})/(?:${WASM_FILES.map((f) => f.replace(/\./g, '\\.')).join('|')})$`),
];

/** The Node range where `require()` loads this ES module package (and so the package works at all from CommonJS). */
const ENGINES_NODE = '^20.19.0 || >=22.12.0';

/**
 * The targets of the README's relative links and images (markdown `[..](..)`, `![..](..)`,
 * reference definitions, HTML `src`/`href`), as paths from the package root, without fragment
 * or query. Code (fenced blocks, inline spans) is dropped first: `a[i](x)` there is not a link.
 */
export function readmeLinks(markdown: string): string[] {
  const text = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
  const targets = [
    ...[...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+["'(][^)]*)?\)/g)].map((m) => m[1]!),
    ...[...text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]!),
    ...[...text.matchAll(/<(?:img|a|source)\b[^>]*?\s(?:src|href|srcset)\s*=\s*["']([^"'\s]+)/gi)].map((m) => m[1]!),
  ];
  const relative = targets
    .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t) && !t.startsWith('#') && !t.startsWith('//'))
    .map((t) => posix.normalize(decodeURI(t.replace(/[?#].*$/, '')).replace(/^\//, '')));
  return [...new Set(relative)].sort();
}

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

  test('every entry point of package.json is shipped, with its type declarations', () => {
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { exports: Record<string, string | Record<string, string>>; bin: Record<string, string> };
    const targets = Object.values(pkg.exports).flatMap((e) => (typeof e === 'string' ? [e] : Object.values(e))).map((f) => f.replace(/^\.\//, ''));
    expect(targets.filter((f) => !packed.files.includes(f))).toEqual([]);
    expect(Object.values(pkg.bin).filter((f) => !packed.files.includes(f))).toEqual([]);
    for (const e of Object.values(pkg.exports)) if (typeof e !== 'string') expect(Object.keys(e)).toEqual(['types', 'default']);
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
      for (const re of [/layerNorm/, /copyInWasm/, /layer_norm_forward/, /copy_f32/, /runChecked[<(]/, /toFloat32[<(]/, /fromFloat32[<(]/, /allocOf[<(]/, /(?<!private )readonly heap\b/]) {
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

  test('every file the README links to (relative links and images) is in the tarball', async () => {
    const readme = await readFile(join(unpacked, 'README.md'), 'utf8');
    const links = readmeLinks(readme);
    expect(links).toEqual(expect.arrayContaining(['docs/web-app.md', 'docs/benchmarks.md']));
    expect(links.filter((l) => !packed.files.includes(l))).toEqual([]);
  });

  test('readmeLinks finds links and images, skips code, absolute URLs and anchors', () => {
    const md = [
      '![chart](bench/a.svg) [doc](docs/b.md#part "title") [web](https://x.org/c.png) [top](#api)',
      '<img src="./docs/d.png" width="50"> `[not](e.md)`',
      '```ts',
      'const y = fns[0](x); [no](f.md)',
      '```',
      '[ref]: docs/g.png',
    ].join('\n');
    expect(readmeLinks(md)).toEqual(['bench/a.svg', 'docs/b.md', 'docs/d.png', 'docs/g.png']);
  });

  test('repository names the git repository (the registry page links it)', async () => {
    const pkg = JSON.parse(await readFile(join(unpacked, 'package.json'), 'utf8')) as { repository?: { type: string; url: string } };
    expect(pkg.repository).toEqual({ type: 'git', url: 'git+https://github.com/rmsnorm-wasm/rmsnorm-wasm.git' });
  });

  test('every declaration file has a declaration map that resolves to a shipped source', async () => {
    const dts = packed.files.filter((f) => f.startsWith('dist/') && f.endsWith('.d.ts'));
    expect(dts.length).toBeGreaterThan(3);
    expect(dts.filter((f) => !packed.files.includes(`${f}.map`))).toEqual([]);
    for (const f of dts) {
      const text = await readFile(join(unpacked, f), 'utf8');
      expect(text, f).toMatch(new RegExp(`//# sourceMappingURL=${posix.basename(f).replace(/\./g, '\\.')}\\.map\\s*$`));
    }
  });

  test('engines states the Node range where require() loads the package, and the README says the same', async () => {
    const pkg = JSON.parse(await readFile(join(unpacked, 'package.json'), 'utf8')) as { engines: Record<string, string> };
    expect(pkg.engines).toEqual({ node: ENGINES_NODE });
    const readme = await readFile(join(unpacked, 'README.md'), 'utf8');
    expect(readme).toContain(`\`${ENGINES_NODE}\``);
  });

  test('the packed entry point loads through require() on this Node, and not where require() of ES modules is off', async () => {
    const entry = join(unpacked, 'bundle', 'index.js');
    const script = `const m = require(${JSON.stringify(entry)}); m.init().then(() => console.log(Array.from(m.rmsNorm(new Float32Array([3, 4]), null, { dim: 2 })).join(',')))`;
    const { stdout } = await run(process.execPath, ['-e', script], { timeout: 30_000 });
    const [a, b] = stdout.trim().split(',').map(Number);
    // [3, 4] / sqrt((9 + 16) / 2 + 1e-6)
    expect(a).toBeCloseTo(3 / Math.sqrt(12.5 + 1e-6), 6);
    expect(b).toBeCloseTo(4 / Math.sqrt(12.5 + 1e-6), 6);
    // Node before 20.19 / 22.12 behaves like this flag: the reason for engines' lower bounds
    const off = await run(process.execPath, ['--no-experimental-require-module', '-e', `require(${JSON.stringify(entry)})`], { timeout: 30_000 }).catch(
      (e: { stderr?: string }) => ({ stderr: e.stderr ?? '', stdout: '' }),
    );
    expect(off.stderr).toContain('ERR_REQUIRE_ESM');
  }, 60_000);

  test('each entry point exports exactly the public API, and its objects carry no test hooks', async () => {
    // The names a user can import: adding one is a decision, so it is listed here.
    const PUBLIC: Record<string, string[]> = {
      'bundle/index.js': [
        'DEFAULT_EPS', 'RmsNorm', 'allocF32', 'allocU16', 'createPool', 'createRmsNorm', 'float32ToHalf', 'halfToFloat32', 'init',
        'instance', 'loadRmsNorm', 'relaxedSimdSupported', 'rmsNorm', 'rmsNormBackward', 'simdSupported', 'statOf', 'threadsAvailable',
      ],
      'bundle/node/index.js': [
        'CHUNK_BYTES', 'NPY_ITEM_BYTES', 'NPY_PREFIX_BYTES', 'NormalizeError', 'NpyError', 'createNormalizeStream', 'normalizeDataset', 'normalizeFile',
        'npyDataOffset', 'npyHeader', 'parseNpyHeader',
      ],
    };
    for (const [entry, names] of Object.entries(PUBLIC)) {
      const m = (await import(pathToFileURL(join(unpacked, entry)).href)) as Record<string, unknown>;
      expect({ entry, names: Object.keys(m).sort() }).toEqual({ entry, names: [...names].sort() });
    }
    const m = (await import(pathToFileURL(join(unpacked, 'bundle/index.js')).href)) as typeof import('../../dist/index.js');
    const pool = await m.createPool({ threads: 1 });
    try {
      expect(Object.getOwnPropertySymbols(pool)).toEqual([]);
      expect(Object.getOwnPropertySymbols(Object.getPrototypeOf(pool))).toEqual([Symbol.asyncDispose]);
    } finally {
      await pool.destroy();
    }
  }, 60_000);

  test('the download sizes in docs/benchmarks.md are those of the packed builds (bench/results/size.json, from npm run bench:size)', async () => {
    const unpacked = join(packed.dir, 'for-sizes');
    await mkdir(unpacked);
    await run('tar', ['xzf', packed.tarball, '-C', unpacked]);
    const committed = JSON.parse(readFileSync(join(REPO, 'bench', 'results', 'size.json'), 'utf8')) as { builds: unknown; scripts: unknown };
    expect(buildSizes(join(unpacked, 'package'))).toEqual(committed.builds);
    expect(scriptSizes(join(unpacked, 'package'))).toEqual(committed.scripts);
    // Each module a page fetches stays light: 64 KiB gzipped at most.
    for (const [b, sz] of Object.entries(buildSizes(join(unpacked, 'package')))) expect([b, sz.wasm.gzipBytes <= 64 * 1024]).toEqual([b, true]);
    // No build ships what nothing reads at run time: the name section and the other custom ones.
    for (const b of Object.keys(committed.builds as object)) {
      const wasm = readFileSync(join(unpacked, 'package', 'wasm', b, 'rmsnorm_wasm_bg.wasm'));
      expect(WebAssembly.Module.customSections(new WebAssembly.Module(wasm), 'name'), b).toEqual([]);
    }
  }, 60_000);

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
