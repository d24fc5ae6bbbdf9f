// Makes a dataset like one a user brings to `rmsnorm-wasm normalize --out-dir`: nested folders
// of NumPy .npy files (float32 and float16, 1 to 20 000 rows), safetensors shards holding
// bfloat16 activations beside int64 and int32 tensors (copied as they are), and a Hugging Face
// cache layout whose snapshot files are symbolic links to content-named blobs. Deterministic
// (one seed), so runs compare like with like.
//
//   node scripts/make-dataset.mjs DIR [MB, default 560]
//
// Prints one JSON line: the files, the bytes and the data bytes that get normalized.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node scripts/make-dataset.mjs DIR [MB]');
  process.exit(2);
}
const budget = Number(process.argv[3] ?? 560) * 1e6;

let seed = 0x2545f491;
const rand = () => {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) / 2 ** 32;
};

/** float32 values in [-3, 3) as bytes. */
function f32Bytes(n) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = rand() * 6 - 3;
  return new Uint8Array(a.buffer);
}
/** float16 bit patterns of values in about [-2, 2] (random sign, exponent 13..16, mantissa). */
function f16Bytes(n) {
  const a = new Uint16Array(n);
  for (let i = 0; i < n; i++) a[i] = ((rand() < 0.5 ? 1 : 0) << 15) | ((13 + Math.floor(rand() * 4)) << 10) | Math.floor(rand() * 1024);
  return new Uint8Array(a.buffer);
}
/** bfloat16 bit patterns: the top halves of float32 values in [-3, 3). */
function bf16Bytes(n) {
  const f = new Float32Array(n);
  for (let i = 0; i < n; i++) f[i] = rand() * 6 - 3;
  const u = new Uint32Array(f.buffer);
  const a = new Uint16Array(n);
  for (let i = 0; i < n; i++) a[i] = u[i] >>> 16;
  return new Uint8Array(a.buffer);
}
function i64Bytes(n) {
  const a = new BigInt64Array(n);
  for (let i = 0; i < n; i++) a[i] = BigInt(i);
  return new Uint8Array(a.buffer);
}

function npy(shape, descr, data) {
  let h = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  h += ' '.repeat(63 - ((10 + h.length) % 64)) + '\n';
  const head = new Uint8Array(10 + h.length);
  head.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, h.length & 0xff, h.length >> 8]);
  head.set(new TextEncoder().encode(h), 10);
  return Buffer.concat([head, data]);
}

function safetensors(tensors) {
  const header = { __metadata__: { format: 'pt' } };
  let at = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [at, at + t.data.length] };
    at += t.data.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([len, Buffer.from(json), ...tensors.map((t) => t.data)]);
}

const files = [];
let bytes = 0;
let normalized = 0;
const put = (rel, b, normBytes) => {
  const path = join(dir, rel);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, b);
  files.push(rel);
  bytes += b.length;
  normalized += normBytes;
};

// A Hugging Face cache: two safetensors shards of bfloat16 hidden states, with token ids
// (int64) and an attention mask (int32) beside them, as links from the snapshot to blobs.
const repo = 'hub/models--acme--tiny-decoder';
for (let s = 0; s < 2; s++) {
  const rows = 6000;
  const dim = 2048;
  const b = safetensors([
    { name: 'hidden_states', dtype: 'BF16', shape: [rows, dim], data: bf16Bytes(rows * dim) },
    { name: 'input_ids', dtype: 'I64', shape: [1, rows], data: i64Bytes(rows) },
    { name: 'attention_mask', dtype: 'I32', shape: [1, rows], data: new Uint8Array(4 * rows).fill(1) },
  ]);
  const blob = `${repo}/blobs/${(0x9e3779b97f4a7c15n * BigInt(s + 1)).toString(16).padStart(16, '0')}`;
  mkdirSync(join(dir, blob, '..'), { recursive: true });
  writeFileSync(join(dir, blob), b);
  const link = `${repo}/snapshots/0123abcd/model-0000${s + 1}-of-00002.safetensors`;
  mkdirSync(join(dir, link, '..'), { recursive: true });
  symlinkSync(`../../blobs/${blob.split('/').pop()}`, join(dir, link));
  files.push(link);
  bytes += b.length;
  normalized += rows * dim * 2;
}

// Nested safetensors of several layers' activations (bfloat16) with their positions (int64).
for (let l = 0; l < 6; l++) {
  const rows = 1 + Math.floor(rand() * 4000);
  const dim = [896, 1536, 2048][l % 3];
  put(
    `activations/layer${l}/acts.safetensors`,
    safetensors([
      { name: 'pre_norm', dtype: 'BF16', shape: [rows, dim], data: bf16Bytes(rows * dim) },
      { name: 'positions', dtype: 'I64', shape: [rows], data: i64Bytes(rows) },
    ]),
    rows * dim * 2,
  );
}

// .npy files of 1 to 20 000 rows (log-uniform), float32 and float16, in nested folders, until the budget.
for (let f = 0; bytes < budget || files.length < 60; f++) {
  const dim = [896, 1024, 2048, 4096][f % 4];
  const half = f % 3 === 1;
  // Within what is left of the budget (the last files are small ones).
  const room = Math.max(1, Math.floor((budget - bytes) / (dim * (half ? 2 : 4)) / 2));
  const rows = Math.min(room, Math.max(1, Math.round(Math.exp(rand() * Math.log(20000)))));
  const n = rows * dim;
  put(`npy/split${f % 3}/part${f % 5}/x${String(f).padStart(4, '0')}.npy`, npy([rows, dim], half ? '<f2' : '<f4', half ? f16Bytes(n) : f32Bytes(n)), n * (half ? 2 : 4));
}
console.log(JSON.stringify({ dir, files: files.length, bytes, normalizedBytes: normalized }));
