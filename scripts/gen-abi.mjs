// Writes ts/abi.ts from crate/src/abi.rs: the wasm boundary's status codes (with their
// meanings), storage type codes and casting flags, so that TypeScript never copies them by
// hand. `node scripts/gen-abi.mjs` rewrites the file; `--check` exits 1 when it is out of date
// (test/abi.test.ts runs that).
import { readFileSync, writeFileSync } from 'node:fs';

const root = new URL('..', import.meta.url);
const RUST = 'crate/src/abi.rs';
const TS = 'ts/abi.ts';

/** The enums and constants of abi.rs: each with its one-line `///` doc. */
export function parseAbi(src) {
  const enums = [];
  for (const m of src.matchAll(/((?:\/\/\/.*\n)+)(?:#\[.*\]\n)*pub enum (\w+) \{\n([\s\S]*?)\n\}/g)) {
    const variants = [...m[3].matchAll(/\/\/\/ (.*)\n\s*(\w+) = (\d+),/g)].map((v) => ({ doc: v[1], name: v[2], value: Number(v[3]) }));
    enums.push({ doc: docOf(m[1]), name: m[2], variants });
  }
  const consts = [...src.matchAll(/((?:\/\/\/.*\n)+)pub const (\w+): u32 = (\d+);/g)].map((m) => ({
    doc: docOf(m[1]),
    name: m[2],
    value: Number(m[3]),
  }));
  return { enums, consts };
}

const docOf = (lines) => lines.trim().split('\n').map((l) => l.replace(/^\/\/\/ ?/, '')).join(' ').replace(/\[`(\w+)`\]/g, '{@link $1}');
const q = (s) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The text of ts/abi.ts for `src` (abi.rs). */
export function renderAbi(src) {
  const { enums, consts } = parseAbi(src);
  const out = [
    `// Written by scripts/gen-abi.mjs from ${RUST}: edit that file, then run \`node scripts/gen-abi.mjs\`.`,
    '/**',
    ' * The wasm boundary\'s codes, as the Rust side defines them: status codes and their meanings,',
    ' * storage type codes, casting flags.',
    ' * @module',
    ' */',
    '',
  ];
  for (const e of enums) {
    // Dtype's keys are the dtype names users write ('float32'); the others keep Rust's names.
    const key = (n) => (e.name === 'Dtype' ? n.toLowerCase() : n);
    out.push(`/** ${e.doc} */`, `export const ${e.name} = {`);
    for (const v of e.variants) out.push(`  /** ${v.doc} */`, `  ${key(v.name)}: ${v.value},`);
    out.push('} as const;', '');
    out.push(`/** ${e.name} code → what it means. */`, `export const ${e.name.toUpperCase()}_TEXT: Readonly<Record<number, string>> = {`);
    for (const v of e.variants) out.push(`  ${v.value}: ${q(v.doc)},`);
    out.push('};', '');
  }
  for (const c of consts) out.push(`/** ${c.doc} */`, `export const ${c.name} = ${c.value};`);
  return out.join('\n') + '\n';
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const want = renderAbi(readFileSync(new URL(RUST, root), 'utf8'));
  const path = new URL(TS, root);
  if (process.argv.includes('--check')) {
    let have = '';
    try {
      have = readFileSync(path, 'utf8');
    } catch {}
    if (have !== want) {
      console.error(`${TS} is out of date with ${RUST}: run node scripts/gen-abi.mjs`);
      process.exit(1);
    }
  } else {
    writeFileSync(path, want);
  }
}
