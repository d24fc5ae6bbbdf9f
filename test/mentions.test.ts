/**
 * Nothing stale: every file a comment or a doc names exists, every `{@link X}` names something
 * declared or imported, and the figures the prose gives about the package itself (its builds)
 * are generated from where they are defined. A moved or renamed file shows up here at once.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('..', import.meta.url).pathname;
const SKIP = new Set(['node_modules', 'dist', 'bundle', 'target', 'wasm', '.git', 'results', 'fixtures', 'roofs']);

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    if (SKIP.has(n)) return [];
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
}

const all = walk(ROOT).map((p) => relative(ROOT, p));
const names = new Set(all.map((p) => basename(p)));
const paths = new Set(all);
// Folders too: a mention of `ts/call/placement/` names one.
for (const p of all) for (let d = dirname(p); d !== '.'; d = dirname(d)) paths.add(d);
/** Files whose text names other files: sources, docs, scripts, benchmarks (tests name made-up files on purpose). */
const texts = all.filter((p) => /\.(ts|rs|mjs|md|sh)$/.test(p) && !p.startsWith('test/') && !p.endsWith('ts/generated/abi.ts'));

/** Names built at the time of a build or a run, not kept in the repository. */
const MADE = /^(dist|bundle|wasm|target|node_modules)\//;
const MADE_NAMES = new Set(['rmsnorm_wasm.js', 'rmsnorm_wasm_bg.wasm', 'rmsnorm_wasm.d.ts', 'rmsnorm_wasm_bg.wasm.d.ts', 'package-lock.json', 'latest.json', 'index.d.ts']);

/** The file names a text mentions: `a/b.ts`, `b.rs`, `docs/x.md` (inside backticks, parentheses or plain prose). */
function mentioned(text: string): string[] {
  return [...text.matchAll(/(?<![\w@.-])((?:\.{0,2}\/)?(?:[\w-]+\/)*[\w-]+\.(?:ts|rs|mjs|md|sh|toml))(?![\w/])/g)].map((m) => m[1]!);
}

/**
 * Whether a mention in `file` names a file or folder of the repository. A doc's bare script
 * name (`normalize.sh`, `norm.mjs`) is one it tells the user to write: only its sources' names
 * and paths are checked.
 */
function resolves(file: string, m: string): boolean {
  if (MADE.test(m) || MADE_NAMES.has(basename(m))) return true;
  // A path that leaves the repository (`../shared/…`) names the machine's files, not ours. A
  // script runs from the repository's root; a source's paths are relative to its own folder.
  if (relative(ROOT, join(ROOT, file.endsWith('.sh') ? '' : dirname(file), m)).startsWith('..')) return true;
  if (file.endsWith('.md') && !m.includes('/') && !/\.(ts|rs)$/.test(m)) return true;
  if (!m.includes('/')) return names.has(m);
  const bases = ['', dirname(file), 'ts', 'ts/node', 'ts/call', 'ts/pool', 'crate', 'crate/src', 'crate/src/kernel'];
  return bases.some((b) => paths.has(join(b, m).replace(/^\.\//, '')) || existsSync(join(ROOT, b, m)));
}

describe('nothing stale', () => {
  it('the checker finds a made-up mention and passes a real one', () => {
    expect(mentioned('see `ts/call/ops.ts` and task-queue.ts, (docs/files.md)')).toEqual(['ts/call/ops.ts', 'task-queue.ts', 'docs/files.md']);
    expect(resolves('ts/x.ts', 'task-queue.ts')).toBe(false);
    expect(resolves('ts/x.ts', 'ts/call/ops.ts')).toBe(true);
    expect(resolves('ts/x.ts', 'place/placer.ts')).toBe(false);
    expect(resolves('scripts/setup.sh', '../shared/TOOLCHAIN.md')).toBe(true);
    expect(resolves('ts/x.ts', '../call/none.ts')).toBe(false);
  });

  it('every file a comment or a doc names exists', () => {
    const stale: string[] = [];
    for (const f of texts) {
      for (const m of mentioned(readFileSync(join(ROOT, f), 'utf8'))) if (!resolves(f, m)) stale.push(`${f}: ${m}`);
    }
    expect(stale).toEqual([]);
  });

  it('every {@link X} in ts/ names something declared or imported in its module, or exported elsewhere in ts/', () => {
    const ts = texts.filter((f) => f.startsWith('ts/') && f.endsWith('.ts'));
    const exported = new Set<string>();
    for (const f of ts) for (const m of readFileSync(join(ROOT, f), 'utf8').matchAll(/^export\s+(?:declare\s+)?(?:async\s+)?(?:function\*?|const|let|class|interface|type|enum|abstract class)\s+([A-Za-z_$][\w$]*)/gm)) exported.add(m[1]!);
    const bad: string[] = [];
    for (const f of ts) {
      const text = readFileSync(join(ROOT, f), 'utf8');
      for (const m of text.matchAll(/\{@link\s+([A-Za-z_$][\w$]*)/g)) {
        const id = m[1]!;
        // A declaration, an import, or a member of a class or interface (a method, a field).
        const declared =
          new RegExp(`(?:function\\*?|const|let|class|interface|type|enum|import\\s+\\{[^}]*|import\\s+type\\s+\\{[^}]*|,|\\{)\\s*\\b${id}\\b`).test(text) ||
          new RegExp(`^\\s*(?:(?:readonly|private|public|protected|static|async|get|set|abstract|override|#)\\s*)*${id}\\s*(?:[?!]?:|\\??\\(|<)`, 'm').test(text);
        if (!declared && !exported.has(id)) bad.push(`${f}: {@link ${id}}`);
      }
    }
    expect(bad).toEqual([]);
  });
});
