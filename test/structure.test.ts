// The repository's shape, checked over all of it: no import circle among the TypeScript
// modules (ts/) or among the Rust modules (crate/src/, by their `use crate::…` / `super::…` /
// `self::…` paths, file by file); no export of ts/ that nothing else names; the compiler refuses
// unused locals; each list of modes or option keys written once; the modules' line caps. Each check is shown to fail on a made-up case first.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SKIP = ['node_modules', 'dist', 'bundle', 'wasm', 'target', '.git', 'fixtures'];
const walk = (d: string): string[] =>
  readdirSync(d).flatMap((f) => {
    const p = join(d, f);
    if (SKIP.includes(f)) return [];
    return statSync(p).isDirectory() ? walk(p) : [p];
  });

type Graph = Record<string, string[]>;

/** ts/'s modules and the modules each imports (static, type-only and dynamic imports alike). */
function tsGraph(): Graph {
  const g: Graph = {};
  for (const f of walk(join(ROOT, 'ts')).filter((p) => p.endsWith('.ts'))) {
    const t = readFileSync(f, 'utf8');
    const specs = [...t.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]/g), ...t.matchAll(/import\(\s*['"](\.[^'"]+)['"]\s*\)/g)];
    g[f] = specs.map((m) => resolve(dirname(f), m[1]!.replace(/\.js$/, '.ts'))).filter((p) => p.startsWith(join(ROOT, 'ts')) && existsSync(p));
  }
  return g;
}

/** crate/src's module files and the module files each one's `use` paths reach. */
function rustGraph(): Graph {
  const src = join(ROOT, 'crate', 'src');
  const files = walk(src).filter((f) => f.endsWith('.rs'));
  const modOf = (f: string) => {
    const r = relative(src, f).replace(/\.rs$/, '').replace(/(^|\/)mod$/, '');
    return r === 'lib' ? '' : r;
  };
  const byMod = new Map(files.map((f) => [modOf(f), f]));
  const g: Graph = {};
  for (const f of files) {
    const me = modOf(f).split('/').filter(Boolean);
    const text = readFileSync(f, 'utf8').replace(/\/\/.*$/gm, '');
    const deps = new Set<string>();
    for (const m of text.matchAll(/\buse\s+((?:crate|super|self)(?:::\w+)+)/g)) {
      const parts = m[1]!.split('::');
      const base = parts[0] === 'crate' ? [] : parts[0] === 'super' ? me.slice(0, -1) : me;
      const rest = parts.slice(1);
      for (let k = rest.length; k >= 0; k--) {
        const target = byMod.get([...base, ...rest.slice(0, k)].join('/'));
        if (target !== undefined) {
          if (target !== f) deps.add(target);
          break;
        }
      }
    }
    g[f] = [...deps];
  }
  return g;
}

/** Every circle of `g` found by a depth-first walk, as paths from ROOT. */
function circles(g: Graph): string[][] {
  const out: string[][] = [];
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const visit = (n: string) => {
    state.set(n, 1);
    stack.push(n);
    for (const m of g[n] ?? []) {
      if (state.get(m) === 1) out.push([...stack.slice(stack.indexOf(m)), m].map((p) => relative(ROOT, p)));
      else if (!state.has(m)) visit(m);
    }
    stack.pop();
    state.set(n, 2);
  };
  for (const n of Object.keys(g)) if (!state.has(n)) visit(n);
  return out;
}

/** Names exported by a ts/ module that no other file of the repository names. */
function unusedExports(): string[] {
  const files = walk(ROOT).filter((f) => /\.(ts|mjs|js)$/.test(f));
  const texts = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]));
  const out: string[] = [];
  // A module an entry point re-exports whole (`export * from`, `export type * from`) is public API: each export is used by being exported.
  const whole = new Set<string>();
  for (const f of files.filter((p) => /^ts\/(node\/)?index\.ts$/.test(relative(ROOT, p)))) {
    for (const m of texts.get(f)!.matchAll(/^export (?:type )?\* from '(\.[^']+)\.js';/gm)) whole.add(join(dirname(f), `${m[1]}.ts`));
  }
  for (const f of files.filter((p) => relative(ROOT, p).startsWith('ts/') && !whole.has(p))) {
    for (const m of texts.get(f)!.matchAll(/^export\s+(?:declare\s+)?(?:async\s+)?(?:function\*?|const|let|class|interface|type|enum|abstract class)\s+([A-Za-z_$][\w$]*)/gm)) {
      const re = new RegExp(`\\b${m[1]!.replace(/\$/g, '\\$')}\\b`);
      if (!files.some((g) => g !== f && re.test(texts.get(g)!))) out.push(`${relative(ROOT, f)}: ${m[1]}`);
    }
  }
  return out;
}

/** A TypeScript file's code without its comments (string contents kept). */
const code = (t: string) => t.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');

/**
 * String literals in ts/ (outside the generated abi.ts, comments left out) equal to one of
 * `names`: the names of a list that abi.rs writes once and everything else reads.
 */
function literalsOf(names: readonly string[], files: [string, string][]): string[] {
  const out: string[] = [];
  for (const [f, t] of files) {
    for (const m of code(t).matchAll(/(['"`])([A-Za-z0-9_-]+)\1/g)) if (names.includes(m[2]!)) out.push(`${f}: ${m[0]}`);
  }
  return out;
}

/**
 * The lists of option keys written in ts/ (outside comments): array literals and unions of
 * string literals naming two or more of `keys`, as `file: the list`.
 */
function keyLists(keys: ReadonlySet<string>, files: [string, string][]): string[] {
  const out: string[] = [];
  for (const [f, t] of files) {
    const c = code(t);
    const lists = [...c.matchAll(/\[[^[\]]*\]/g), ...c.matchAll(/(?:'[A-Za-z]+'\s*\|\s*)+'[A-Za-z]+'/g)].map((m) => m[0]);
    for (const l of lists) if ([...l.matchAll(/'([A-Za-z]+)'/g)].filter((m) => keys.has(m[1]!)).length >= 2) out.push(`${f}: ${l.replace(/\s+/g, ' ')}`);
  }
  return out;
}

describe('the repository\'s structure', () => {
  it('the circle finder finds a circle', () => {
    expect(circles({ a: ['b'], b: ['c'], c: ['a'], d: ['a'] }).map((c) => c.join(' → '))).toEqual(['a → b → c → a']);
  });

  it('no import circle among the TypeScript modules', () => {
    const g = tsGraph();
    expect(Object.keys(g).length).toBeGreaterThan(50);
    expect(circles(g)).toEqual([]);
  });

  it('no module of ts/ imports a public entry point (ts/index.ts, ts/node/index.ts): each imports what it uses from its own module', () => {
    const g = tsGraph();
    const entries = [join(ROOT, 'ts/index.ts'), join(ROOT, 'ts/node/index.ts')];
    expect(Object.entries(g).filter(([, deps]) => deps.some((d) => entries.includes(d))).map(([f]) => relative(ROOT, f))).toEqual([]);
  });

  it('layers: the pool knows nothing of files, the glue nothing of calls; within ts/node/ no folder imports one above it', () => {
    const g = tsGraph();
    const under = (d: string) => (f: string) => relative(ROOT, f).startsWith(d);
    const reaching = (from: string, to: string) =>
      Object.entries(g).filter(([f, deps]) => under(from)(f) && deps.some(under(to))).map(([f]) => relative(ROOT, f));
    expect(Object.keys(g).some(under('ts/pool/')) && Object.keys(g).some(under('ts/node/'))).toBe(true);
    expect(reaching('ts/pool/', 'ts/node/')).toEqual([]);
    expect(reaching('ts/glue/', 'ts/call/')).toEqual([]);
    expect(reaching('ts/pool/worker/', 'ts/pool/caller/')).toEqual([]);
    // io ← formats ← file ← dataset ← command
    const order = ['ts/node/io/', 'ts/node/formats/', 'ts/node/file/', 'ts/node/dataset/', 'ts/node/command/'];
    order.forEach((d, i) => {
      for (const above of order.slice(i + 1)) expect(reaching(d, above), `${d} → ${above}`).toEqual([]);
    });
  });

  it('ts/node/ has at most 10 files at its top (the rest by concern: command, file, io, formats, dataset)', () => {
    const top = readdirSync(join(ROOT, 'ts/node')).filter((n) => statSync(join(ROOT, 'ts/node', n)).isFile());
    expect(top.length).toBeGreaterThan(0);
    expect(top.length).toBeLessThanOrEqual(10);
  });

  it('no import circle among the Rust modules', () => {
    const g = rustGraph();
    // the graph is read: the kernel's modules use one another
    expect(g[join(ROOT, 'crate/src/kernel/forward.rs')]).toContain(join(ROOT, 'crate/src/kernel/reduce.rs'));
    expect(circles(g)).toEqual([]);
  });

  it('every export of ts/ is named somewhere else', () => {
    expect(unusedExports()).toEqual([]);
  });

  it('the casting and gate modes are named by abi.rs alone: no string literal of one in ts/', async () => {
    const { Casting, Gate } = await import('../ts/generated/abi.js');
    // 'none' also names other things (a progress mode): the modes that are only modes.
    const names = [...Object.keys(Casting), ...Object.keys(Gate)].filter((n) => n !== 'none');
    expect(names).toEqual(expect.arrayContaining(['llama', 'gemma', 'after', 'before']));
    // abi.ts is generated from abi.rs; types.ts spells the public unions out for the API
    // reference, and dtypes.ts has the compiler hold them to abi.ts.
    const files = walk(join(ROOT, 'ts'))
      .filter((f) => f.endsWith('.ts') && !f.endsWith('ts/generated/abi.ts') && !f.endsWith('ts/types.ts'))
      .map((f) => [relative(ROOT, f), readFileSync(f, 'utf8')] as [string, string]);
    expect(literalsOf(names, [['made-up.ts', "// 'llama' in a comment\nconst a = 'gemma';\nconst b = `x`; /* 'after' */"]])).toEqual(["made-up.ts: 'gemma'"]);
    expect(literalsOf(names, files)).toEqual([]);
  });

  it('every list of option keys is written once, in its table: no other array or union of two or more of them in ts/', async () => {
    const { PARAM_KEYS, FORWARD_ONLY_KEYS, operandKeys } = await import('../ts/call/check/params.js');
    const { OPS } = await import('../ts/call/ops.js');
    const { FILE_KEYS } = await import('../ts/node/file/options.js');
    const keys = new Set([...PARAM_KEYS, ...FILE_KEYS, ...OPS.flatMap((op) => operandKeys(op))]);
    expect([...keys]).toEqual(expect.arrayContaining(['eps', 'outDtype', 'rstd', 'inPlace', 'residual', 'dweight']));
    const files = walk(join(ROOT, 'ts'))
      .filter((f) => f.endsWith('.ts') && !f.endsWith('ts/generated/abi.ts'))
      .map((f) => [relative(ROOT, f), readFileSync(f, 'utf8')] as [string, string]);
    expect(keyLists(keys, [['made-up.ts', "const a = ['eps', 'offset'];\n// ['eps', 'rstd']\ntype B = 'out' | 'rstd';\nconst c = ['eps', 'other'];"]])).toEqual([
      "made-up.ts: ['eps', 'offset']",
      "made-up.ts: 'out' | 'rstd'",
    ]);
    // The tables: the options only a forward has; the operands each short way takes (a choice
    // of that way, not a fact of the operation); the public types' Pick of the layer's options.
    expect(keyLists(keys, files).map((l) => l.split(':')[0])).toEqual(['ts/call/check/params.ts', 'ts/call/short-ways/backward.ts', 'ts/call/short-ways/forward.ts', 'ts/types.ts', 'ts/types.ts', 'ts/types.ts']);
    expect(FORWARD_ONLY_KEYS.length).toBeGreaterThan(0);
  });

  it('the command\'s exit codes and progress modes are written once: exit-codes.ts and flags.ts', () => {
    const files = walk(join(ROOT, 'ts'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => [relative(ROOT, f), code(readFileSync(f, 'utf8'))] as [string, string]);
    const codes = files.filter(([f, t]) => f !== 'ts/node/exit-codes.ts' && /(?<![\w.])(75|130|137|143|129)(?![\w.])|128 \+/.test(t.replace(/(['"`])(?:\\.|(?!\1).)*\1/g, "''")));
    expect(codes.map(([f]) => f)).toEqual([]);
    const modes = new Set(['auto', 'tty', 'log', 'none']);
    expect(keyLists(modes, files).map((l) => l.split(':')[0])).toEqual(['ts/node/command/flags.ts']);
  });

  it('no TypeScript module of ts/ over 300 lines, no Rust file of crate/src over 350', () => {
    const over = (dir: string, ext: string, cap: number) =>
      walk(join(ROOT, dir))
        .filter((f) => f.endsWith(ext))
        .map((f) => [relative(ROOT, f), readFileSync(f, 'utf8').split('\n').length - 1] as const)
        .filter(([, lines]) => lines > cap);
    expect(over('ts', '.ts', 300)).toEqual([]);
    expect(over('crate/src', '.rs', 350)).toEqual([]);
  });

  it('the compiler refuses unused locals', () => {
    const cfg = JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')) as { compilerOptions: Record<string, unknown> };
    expect(cfg.compilerOptions.noUnusedLocals).toBe(true);
  });
});
