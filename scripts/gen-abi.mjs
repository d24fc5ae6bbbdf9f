// Writes ts/generated/abi.ts from crate/src/abi.rs: the wasm boundary's status codes (with their
// meanings), the storage types and their facts, the casting flags, the gate codes, the layout
// of a call's parameter block and each operation's operand order, so that TypeScript never
// copies them by hand. `node scripts/gen-abi.mjs` rewrites the file; `--check` exits 1 when it is out of date
// (test/abi.test.ts runs that).
import { readFileSync, writeFileSync } from 'node:fs';

const root = new URL('..', import.meta.url);
const RUST = 'crate/src/abi.rs';
const TS = 'ts/generated/abi.ts';

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
  const block = /((?:\/\/\/.*\n)+)#\[repr\(C\)\]\n(?:#\[.*\]\n)*pub struct Params \{\n([\s\S]*?)\n\}/.exec(src);
  if (!block) throw new Error(`${RUST}: no #[repr(C)] struct Params`);
  const params = {
    doc: docOf(block[1]),
    fields: [...block[2].matchAll(/\/\/\/ (.*)\n\s*pub (\w+): (u32|f32),/g)].map((f, word) => ({ doc: f[1], name: f[2], float: f[3] === 'f32', word })),
  };
  const table = /pub const DTYPES: [^=]*= \[([\s\S]*?)\n\];/.exec(src);
  if (!table) throw new Error(`${RUST}: no DTYPES table`);
  const dtypes = [...table[1].matchAll(/DtypeFacts \{([^}]*)\}/g)].map((m) =>
    Object.fromEntries(
      [...m[1].matchAll(/(\w+): ("[^"]*"|true|false|\d+)/g)].map(([, k, v]) => [k, v.startsWith('"') ? JSON.parse(v) : v === 'true' || v === 'false' ? v === 'true' : Number(v)]),
    ),
  );
  // Each operation's operand table: `macro_rules! x_operands { ... $then! { /// doc  View, XOperand[, [ /// doc  Work = N ]];
  // /// doc  Name = N, Extent, field: type; ... } }`, read as the enum of its places and the list of its extents.
  const extents = [];
  for (const m of src.matchAll(/macro_rules! \w+_operands \{[\s\S]*?\$then! \{\n((?:\s*\/\/\/.*\n)+)\s*\w+, (\w+Operand)(?:, \[\n((?:\s*\/\/\/.*\n)+)\s*(\w+) = (\d+)\n\s*\])?;\n([\s\S]*?)\n\s*\}\n\s*\};/g)) {
    const rows = [...m[6].matchAll(/\/\/\/ (.*)\n\s*(\w+) = (\d+), (\w+), \w+: [^;]+;/g)];
    const variants = rows.map((r) => ({ doc: r[1], name: r[2], value: Number(r[3]) }));
    if (m[4] !== undefined) variants.push({ doc: docOf(m[3]), name: m[4], value: Number(m[5]) });
    enums.push({ doc: docOf(m[1]), name: m[2], variants });
    extents.push({ name: m[2], values: rows.map((r) => r[4]) });
  }
  return { enums, consts, params, dtypes, extents };
}

const docOf = (lines) => lines.trim().split('\n').map((l) => l.replace(/^\/\/\/ ?/, '')).join(' ').replace(/\[`(\w+)`\]/g, '{@link $1}');
const q = (s) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** FNV-1a (32 bits) of `bytes`, as crate/src/bindings/mod.rs's `fnv1a` computes it. */
function fnv1a(bytes) {
  let h = 0x811c9dc5;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h;
}

/** The text of ts/generated/abi.ts for `src` (abi.rs). */
export function renderAbi(src) {
  const { enums, consts, params, dtypes, extents } = parseAbi(src);
  const out = [
    `// Written by scripts/gen-abi.mjs from ${RUST}: edit that file, then run \`node scripts/gen-abi.mjs\`.`,
    '/**',
    ' * The wasm boundary, as the Rust side defines it: status codes and their meanings, storage',
    ' * types and their facts, casting flags, gate codes, the parameter block of a call and each',
    ' * operation\'s operand order.',
    ' * @module',
    ' */',
    '',
  ];
  for (const e of enums) {
    // Dtype's, Casting's and Gate's keys are the names users write ('float32', 'llama',
    // 'after'); operands are named as in the API ('x', 'dresidual'); status codes keep Rust's names.
    const key = (n) => (['Dtype', 'Casting', 'Gate'].includes(e.name) ? n.toLowerCase() : e.name.endsWith('Operand') ? n[0].toLowerCase() + n.slice(1) : n);
    out.push(`/** ${e.doc} */`, `export const ${e.name} = {`);
    for (const v of e.variants) out.push(`  /** ${v.doc} */`, `  ${key(v.name)}: ${v.value},`);
    out.push('} as const;', '');
    // Codes a message may show get their meanings as text; an operand's slot and its extent are
    // only indices, and a casting mode is shown by its name.
    if (e.name.endsWith('Operand') || e.name === 'Extent' || e.name === 'Casting') continue;
    out.push(`/** ${e.name} code → what it means. */`, `export const ${e.name.toUpperCase()}_TEXT: Readonly<Record<number, string>> = {`);
    for (const v of e.variants) out.push(`  ${v.value}: ${q(v.doc)},`);
    out.push('};', '');
  }
  for (const x of extents) {
    out.push(`/** Each {@link ${x.name}}'s {@link Extent}, in operand order. */`, `export const ${x.name.replace(/Operand$/, '').toUpperCase()}_EXTENTS = [${x.values.map((v) => `Extent.${v}`).join(', ')}] as const;`, '');
  }
  const operands = enums.filter((e) => e.name.endsWith('Operand'));
  out.push('/** The most address words any operation\'s entry points read (its operands, a workspace): a call block\'s capacity. */', `export const MAX_OPERANDS = ${Math.max(...operands.map((e) => e.variants.length))};`, '');
  for (const c of consts) out.push(`/** ${c.doc} */`, `export const ${c.name} = ${c.value};`);
  out.push('', `/** ${params.doc} Each field's 4-byte word in the block, and whether it is a float32. */`, 'export const PARAMS = {');
  for (const f of params.fields) out.push(`  /** ${f.doc} */`, `  ${f.name}: { word: ${f.word}, float: ${f.float} },`);
  out.push('} as const;', '', '/** Words (4 bytes each) in a {@link PARAMS} block. */', `export const PARAMS_WORDS = ${params.fields.length};`);
  // One store per field, by name: a loop over PARAMS would read them through keyed lookups,
  // which cost more than the kernel call they prepare on short rows.
  out.push(
    '',
    '/** Writes `q` as a {@link PARAMS} block at word `at` of `i32` (`f32`: a view of the same bytes). */',
    'export function writeParamsBlock(i32: Int32Array, f32: Float32Array, at: number, q: { readonly [K in keyof typeof PARAMS]: number }): void {',
    ...params.fields.map((f) => `  ${f.float ? 'f32' : 'i32'}[at + ${f.word}] = q.${f.name};`),
    '}',
    '',
    '/** A new {@link PARAMS} record, every field 0: one literal, so that every call\'s record has one shape (which the writer above reads fast). */',
    'export function blankParams(): { -readonly [K in keyof typeof PARAMS]: number } {',
    `  return { ${params.fields.map((f) => `${f.name}: 0`).join(', ')} };`,
    '}',
  );
  out.push('', '/** The storage types\' facts, by {@link Dtype} code (see `DtypeFacts` in abi.rs). */', 'export const DTYPE_FACTS = [');
  for (const d of dtypes) out.push(`  { ${Object.entries(d).map(([k, v]) => `${k}: ${typeof v === 'string' ? q(v) : v}`).join(', ')} },`);
  out.push('] as const;');
  out.push('', `/** The hash of the abi.rs this file was written from: a module whose \`abi_hash()\` differs was built from another. */`, `export const ABI_HASH = 0x${fnv1a(Buffer.from(src, 'utf8')).toString(16).padStart(8, '0')};`);
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
