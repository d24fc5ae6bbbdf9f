// Writes the operations' public methods from their API entries (each operation's module of
// ts/call/operations/, listed in ts/call/ops.ts), so that no method is written by hand per
// operation: ts/generated/operations.ts (the instance's methods, the pool's interface and its
// methods) and ts/generated/functions.ts (the top-level functions). `npx tsx scripts/gen-api.ts`
// rewrites them; `--check` exits 1 when one is out of date (test/abi.test.ts runs that).
import { readFileSync, writeFileSync } from 'node:fs';
import { OPS } from '../ts/call/ops.js';
import type { ApiEntry } from '../ts/call/op.js';

const root = new URL('..', import.meta.url);
const HEAD = (what: string) => [
  '// Written by scripts/gen-api.ts from the operations\' API entries (ts/call/operations/): edit those, then run `npx tsx scripts/gen-api.ts`.',
  '/**',
  ` * ${what}`,
  ' * @module',
  ' */',
];

/** `text` as the lines of a doc comment indented by `pad`. */
const doc = (text: string, pad: string): string[] => [`${pad}/**`, ...text.split('\n').map((l) => `${pad} *${l === '' ? '' : ` ${l}`}`), `${pad} */`];

/** The argument names a parameter list declares (`x: T, weight: W | null, options?: O` → x, weight, options). */
const names = (params: string): string[] => [...params.matchAll(/(?:^|,\s*)(\w+)\??:/g)].map((m) => m[1]!);

/** The pool's form of a parameter list: its options also take the pool's per-call options. */
const poolParams = (params: string): string => params.replace(/(options\??: )(.*)$/, (_, head: string, type: string) => `${head}(${type}) & PoolCallOptions`);

/** The call's four positional slots of an operation's arguments (its options last, the rest undefined). */
const slots = (api: ApiEntry): string => {
  const n = names(api.impl.params);
  return [...n, ...Array(4 - n.length).fill('undefined')].join(', ');
};

function operations(): string {
  const types = [...new Set(OPS.flatMap((op) => op.api.types))].sort();
  const out = [
    ...HEAD('The operations\' public methods: the sync instance\'s (rmsnorm.ts extends {@link Operations}), the pool\'s interface and its methods (pool/caller/pool.ts extends {@link PoolMethods}).'),
    `import type { ${[...types, 'PoolCallOptions'].join(', ')} } from '../types.js';`,
    "import { OPS } from '../call/ops.js';",
    "import type { Op } from '../call/op.js';",
    '',
    '/** The operations\' methods of the sync API (rmsnorm.ts RmsNorm has them), each running its operation through the instance. */',
    'export abstract class Operations {',
    '  /** Runs a call of `op` (`fn` names it in errors) with its positional arguments: its short way, or its check and the general way. @internal */',
    '  protected abstract callOp(fn: string, op: Op, a: unknown, b: unknown, c: unknown, d: unknown): unknown;',
  ];
  for (const op of OPS) {
    const a = op.api;
    out.push('', ...doc(a.doc, '  '));
    for (const o of a.overloads) out.push(`  ${a.method}${o.generics ?? ''}(${o.params}): ${o.returns};`);
    out.push(`  ${a.method}(${a.impl.params}): ${a.impl.returns} {`, `    return this.callOp('${a.method}', OPS[${op.id}]!, ${slots(a)}) as ${a.impl.returns};`, '  }');
  }
  out.push('}', '', '/** The operations\' methods of a worker pool (pool/api.ts RmsNormPool has them). */', 'export interface PoolOperations {');
  for (const op of OPS) {
    const a = op.api;
    for (const o of a.overloads) out.push(...doc(`${a.poolDoc}\n\n${a.doc}`, '  '), `  ${a.method}${o.generics ?? ''}(${poolParams(o.params)}): Promise<${o.returns}>;`);
  }
  out.push(
    '}',
    '',
    '/** The pool\'s operation methods (pool/caller/pool.ts Pool has them), each submitting its operation to the pool. */',
    'export abstract class PoolMethods implements PoolOperations {',
    '  /** Submits a call of `op` (`fn` names it in errors) with its positional arguments, `options` its options. @internal */',
    '  protected abstract submitOp(fn: string, op: Op, a: unknown, b: unknown, c: unknown, d: unknown, options: unknown): Promise<unknown>;',
  );
  for (const op of OPS) {
    const a = op.api;
    for (const o of a.overloads) out.push(`  ${a.method}${o.generics ?? ''}(${poolParams(o.params)}): Promise<${o.returns}>;`);
    out.push(
      `  ${a.method}(${poolParams(a.impl.params)}): Promise<${a.impl.returns}> {`,
      `    return this.submitOp('pool.${a.method}', OPS[${op.id}]!, ${slots(a)}, options) as Promise<${a.impl.returns}>;`,
      '  }',
    );
  }
  out.push('}');
  return out.join('\n') + '\n';
}

function functions(): string {
  const types = [...new Set(OPS.flatMap((op) => op.api.types))].sort();
  const out = [
    ...HEAD('The operations as the package\'s top-level functions, on the instance {@link init} loaded (index.ts re-exports them).'),
    `import type { ${types.join(', ')} } from '../types.js';`,
    "import { ready } from '../call/current.js';",
  ];
  for (const op of OPS) {
    const a = op.api;
    out.push('', ...doc(a.doc, ''));
    for (const o of a.overloads) out.push(`export function ${a.method}${o.generics ?? ''}(${o.params}): ${o.returns};`);
    // The implementation's union of options is each overload's case: passed on as such.
    const args = names(a.impl.params).map((n, i, all) => (i === all.length - 1 ? `${n} as never` : n));
    out.push(`export function ${a.method}(${a.impl.params}): ${a.impl.returns} {`, `  return ready('${a.method}').${a.method}(${args.join(', ')}) as ${a.impl.returns};`, '}');
  }
  return out.join('\n') + '\n';
}

const FILES: Record<string, () => string> = { 'ts/generated/operations.ts': operations, 'ts/generated/functions.ts': functions };
const stale = Object.entries(FILES).filter(([path, make]) => {
  const want = make();
  const url = new URL(path, root);
  let have = '';
  try {
    have = readFileSync(url, 'utf8');
  } catch {}
  if (have === want) return false;
  if (!process.argv.includes('--check')) writeFileSync(url, want);
  return true;
});
if (process.argv.includes('--check') && stale.length) {
  console.error(`${stale.map(([p]) => p).join(', ')} out of date with the operations' API entries: run npx tsx scripts/gen-api.ts`);
  process.exit(1);
}
