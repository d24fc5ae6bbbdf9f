/**
 * `npm run bench:size`: what a page downloads, per wasm build, measured on the files of the
 * packed tarball (`npm pack`), as a user gets them: the .wasm file and its JavaScript glue, raw
 * and gzip-compressed (level 9, what a server's static compression gives at most); and the
 * JavaScript that importing the package loads (its entry and the chunks that imports, each file
 * compressed on its own as a server sends it), and the pool's code fetched on `createPool`. Writes
 * bench/results/size.json and regenerates docs/benchmarks.md; test/browser/pack.test.ts checks
 * that the committed figures are those of the tarball the build makes.
 * @module
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { BUILDS } from '../ts/glue/load.js';
import { writeBenchmarks } from './docs.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));

/** Bytes of one file, raw and gzipped. */
function sizeOf(b: Buffer): { bytes: number; gzipBytes: number } {
  return { bytes: b.length, gzipBytes: gzipSync(b, { level: 9 }).length };
}

/** What each build weighs. */
export type BuildSizes = Record<string, { wasm: { bytes: number; gzipBytes: number }; glue: { bytes: number; gzipBytes: number } }>;

/** Per build, the module and the glue in the unpacked tarball at `root` (its `package/` folder). */
export function buildSizes(root: string): BuildSizes {
  return Object.fromEntries(
    BUILDS.map((b) => [
      b,
      { wasm: sizeOf(readFileSync(join(root, 'wasm', b, 'rmsnorm_wasm_bg.wasm'))), glue: sizeOf(readFileSync(join(root, 'wasm', b, 'rmsnorm_wasm.js'))) },
    ]),
  );
}

/** The JavaScript of the package at `root`: what `import` loads, and the pool's code (loaded by createPool). */
export interface ScriptSizes {
  import: { files: number; bytes: number; gzipBytes: number };
  pool: { files: number; bytes: number; gzipBytes: number };
}

/** The relative static (or, `dynamic`, dynamic) imports of a JavaScript file. */
const importsOf = (text: string, dynamic: boolean) =>
  [...text.matchAll(dynamic ? /import\("(\.{1,2}\/[^"]+)"\)/g : /(?:from|import)\s*"(\.{1,2}\/[^"]+)"/g)].map((m) => m[1]!);

/** The files `entry` (a path under `root`) loads at once: itself and its static imports, transitively. */
function closure(root: string, entry: string): string[] {
  const seen: string[] = [];
  const walk = (f: string) => {
    if (seen.includes(f)) return;
    seen.push(f);
    for (const i of importsOf(readFileSync(join(root, f), 'utf8'), false)) walk(posix.join(posix.dirname(f), i));
  };
  walk(entry);
  return seen;
}

/** Per part, the JavaScript of the package at `root` (see {@link ScriptSizes}). */
export function scriptSizes(root: string): ScriptSizes {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: { '.': { default: string } } };
  const entry = posix.normalize(pkg.exports['.'].default);
  const atImport = closure(root, entry);
  // The dynamic imports of the bundle's own files (the wasm glue beside it is counted per build).
  const lazy = atImport
    .flatMap((f) => importsOf(readFileSync(join(root, f), 'utf8'), true).map((i) => posix.join(posix.dirname(f), i)))
    .filter((f) => f.startsWith(posix.dirname(entry) + '/'));
  const pool = [...new Set(lazy.flatMap((f) => closure(root, f)))].filter((f) => !atImport.includes(f));
  const sum = (files: string[]) => {
    const each = files.map((f) => sizeOf(readFileSync(join(root, f))));
    return { files: files.length, bytes: each.reduce((a, s) => a + s.bytes, 0), gzipBytes: each.reduce((a, s) => a + s.gzipBytes, 0) };
  };
  return { import: sum(atImport), pool: sum(pool) };
}

/** Packs the repository as built (no scripts), unpacks the tarball, and measures it. */
export function packedSizes(): { builds: BuildSizes; scripts: ScriptSizes } {
  const dir = mkdtempSync(join(tmpdir(), 'rmsnorm-size-'));
  try {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')));
    const out = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: REPO, env, encoding: 'utf8', maxBuffer: 64 << 20 });
    const tarball = join(dir, (JSON.parse(out) as { filename: string }[])[0]!.filename);
    execFileSync('tar', ['xzf', tarball, '-C', dir]);
    return { builds: buildSizes(join(dir, 'package')), scripts: scriptSizes(join(dir, 'package')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { builds, scripts } = packedSizes();
  const out = fileURLToPath(new URL('results/size.json', import.meta.url));
  writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), builds, scripts }, null, 2) + '\n');
  for (const [b, s] of Object.entries(builds)) {
    process.stdout.write(`${b.padEnd(22)} wasm ${(s.wasm.bytes / 1024).toFixed(0).padStart(5)} KiB, gzip ${(s.wasm.gzipBytes / 1024).toFixed(0).padStart(4)} KiB; glue gzip ${(s.glue.gzipBytes / 1024).toFixed(1)} KiB\n`);
  }
  writeBenchmarks();
  process.stderr.write(`wrote ${out} and docs/benchmarks.md\n`);
}
