/**
 * File formats of the batch tool, told by content: `.npz` files written by NumPy (stored and
 * deflated) and safetensors files written by the safetensors package
 * (test/fixtures/formats, made by scripts/make-format-fixtures.py) are read; every float array
 * is normalized with the sync API's bits, the others are copied byte for byte; float64 is read
 * as float32; `outDtype` rounds once; outputs are containers NumPy and safetensors read (the
 * layouts are checked here against the files those libraries wrote); a file no format knows is
 * refused, naming what it starts with.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRmsNorm, type RmsNorm } from '../dist/index.js';
import { normalizeFile, NormalizeError, npyHeader, parseNpyHeader } from '../dist/node/index.js';
import { safetensorsFormat } from '../dist/node/formats/safetensors.js';
import { openSource } from '../dist/node/io/source.js';
import { firstBitDiff, mismatch, refForward, sameBits, yTolerance } from '../shared/reference.js';
import { value, values } from './format-values.js';

const FIX = new URL('./fixtures/formats/', import.meta.url).pathname;
const NPY = new URL('./fixtures/npy/', import.meta.url).pathname;
const BIN = new URL('../bundle/node/bin.js', import.meta.url).pathname;
let dir: string;
let m: RmsNorm;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rmsnorm-formats-'));
  m = await loadRmsNorm('simd');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));


/** The members of a zip whose members are stored (what the package writes), by name. An independent reader: local headers, walked front to back. */
function storedMembers(b: Buffer): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  let p = 0;
  while (b.readUInt32LE(p) === 0x04034b50) {
    const flags = b.readUInt16LE(p + 6);
    expect(b.readUInt16LE(p + 8), 'stored').toBe(0);
    const nameLen = b.readUInt16LE(p + 26);
    const extraLen = b.readUInt16LE(p + 28);
    const size = b.readUInt32LE(p + 22);
    const name = b.subarray(p + 30, p + 30 + nameLen).toString('utf8');
    const start = p + 30 + nameLen + extraLen;
    out.set(name, b.subarray(start, start + size));
    p = start + size + (flags & 8 ? 16 : 0);
  }
  expect(b.readUInt32LE(p), 'the central directory follows the members').toBe(0x02014b50);
  return out;
}

/** An `.npy`'s header and data. */
function npyOf(b: Buffer): { dtype: string; shape: number[]; data: Buffer } {
  const h = parseNpyHeader(new Uint8Array(b), b.length, 'member');
  return { dtype: h.dtype, shape: h.shape, data: b.subarray(h.dataOffset) };
}

/** A safetensors file's tensors: dtype, shape and data. */
function tensorsOf(b: Buffer): Map<string, { dtype: string; shape: number[]; data: Buffer }> {
  const n = Number(b.readBigUInt64LE(0));
  const header = JSON.parse(b.subarray(8, 8 + n).toString('utf8')) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const out = new Map<string, { dtype: string; shape: number[]; data: Buffer }>();
  for (const [k, v] of Object.entries(header)) {
    if (k !== '__metadata__') out.set(k, { dtype: v.dtype, shape: v.shape, data: b.subarray(8 + n + v.data_offsets[0], 8 + n + v.data_offsets[1]) });
  }
  return out;
}

const f32 = (b: Buffer) => new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
const u16 = (b: Buffer) => new Uint16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
const dimOf = (shape: number[]) => shape[shape.length - 1]!;

/** What the sync API makes of `n` fixture values of `dtype` in rows of `dim` (float64 read as float32). */
function expected(dtype: string, n: number, dim: number): Float32Array | Uint16Array {
  const v = Float32Array.from(values(n));
  if (dtype === 'float32' || dtype === 'float64') return m.rmsNorm(v, null, { dim });
  const bits = m.float32ToHalf(v, dtype as 'float16');
  return m.rmsNorm(bits, null, { dim, dtype: dtype as 'float16' });
}

describe('.npz written by NumPy', () => {
  it.each(['savez.npz', 'savez-compressed.npz'])('%s: each float member normalized (float64 to float32), the others copied; a zip of stored .npy members', async (name) => {
    const out = join(dir, `out-${name}`);
    const s = await normalizeFile(join(FIX, name), out, { threads: 1 });
    expect(s.format).toBe('npz');
    expect(s.arrays.map((a) => [a.name, a.dtype, a.outDtype])).toEqual([
      ['acts', 'float32', 'float32'],
      ['half', 'float16', 'float16'],
      ['wide', 'float64', 'float32'],
    ]);
    expect(s.copied).toEqual(['ids.npy', 'scale.npy']);
    const members = storedMembers(readFileSync(out));
    expect([...members.keys()]).toEqual(['acts.npy', 'half.npy', 'wide.npy', 'ids.npy', 'scale.npy']);
    for (const [member, dtype, shape] of [['acts.npy', 'float32', [3, 5, 16]], ['half.npy', 'float16', [4, 8]], ['wide.npy', 'float32', [2, 16]]] as const) {
      const a = npyOf(members.get(member)!);
      expect(a.dtype).toBe(dtype);
      expect(a.shape).toEqual(shape);
      const n = shape.reduce((x: number, y: number) => x * y, 1);
      const want = expected(member === 'wide.npy' ? 'float64' : dtype, n, dimOf([...shape]));
      expect(sameBits(dtype === 'float16' ? u16(a.data) : f32(a.data), want), member).toBe(true);
    }
    // The integer and 0-d members are NumPy's own bytes (as np.savez stored them).
    const stored = readFileSync(join(FIX, 'savez.npz'));
    for (const k of ['ids.npy', 'scale.npy']) {
      const member = members.get(k)!;
      expect(member.subarray(0, 6).toString('latin1'), k).toBe('\x93NUMPY');
      expect(stored.includes(member), k).toBe(true);
    }
    expect(members.get('ids.npy')!.subarray(-40).equals(Buffer.from(new BigInt64Array([0n, 1n, 2n, 3n, 4n]).buffer))).toBe(true);
  });

  it('a damaged deflated member is refused (its CRC-32), with no output', async () => {
    const b = Buffer.from(readFileSync(join(FIX, 'savez-compressed.npz')));
    // A byte inside the first member's compressed data.
    const start = 30 + b.readUInt16LE(26) + b.readUInt16LE(28);
    b[start + 40] = b[start + 40]! ^ 0x55;
    writeFileSync(join(dir, 'damaged.npz'), b);
    const err = await normalizeFile(join(dir, 'damaged.npz'), join(dir, 'damaged-out.npz')).catch((e: Error) => e);
    expect(err).toBeInstanceOf(NormalizeError);
    expect((err as Error).message).toMatch(/damaged\.npz: member "acts\.npy".*(damaged|CRC)/);
  });

  it('--tensor picks the members; --rstd is an .npz of the same names; --out-dtype float16', () => {
    const out = join(dir, 'picked.npz');
    const rstd = join(dir, 'picked-rstd.npz');
    const r = spawnSync(process.execPath, [BIN, 'normalize', join(FIX, 'savez.npz'), out, '--tensor', 'acts', '--tensor', 'wide', '--out-dtype', 'float16', '--rstd', rstd], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^normalized 2 arrays, 17 rows \(float32 → float16, .*; 3 arrays copied as they are → /);
    const members = storedMembers(readFileSync(out));
    const acts = npyOf(members.get('acts.npy')!);
    expect(acts.dtype).toBe('float16');
    expect(sameBits(u16(acts.data), m.float32ToHalf(expected('float32', 240, 16) as Float32Array, 'float16'))).toBe(true);
    const half = npyOf(members.get('half.npy')!);
    expect(half.dtype).toBe('float16');
    expect(sameBits(u16(half.data), m.float32ToHalf(Float32Array.from(values(32)), 'float16')), 'copied as it is').toBe(true);
    const rs = storedMembers(readFileSync(rstd));
    expect([...rs.keys()]).toEqual(['acts.npy', 'wide.npy']);
    expect(npyOf(rs.get('acts.npy')!).shape).toEqual([3, 5]);
    expect(npyOf(rs.get('wide.npy')!).shape).toEqual([2]);
  });
});

describe('safetensors written by the safetensors package', () => {
  it('every float tensor normalized (bfloat16 too, float64 to float32), the others copied; metadata kept', async () => {
    const out = join(dir, 'out.safetensors');
    const s = await normalizeFile(join(FIX, 'tensors.safetensors'), out);
    expect(s.format).toBe('safetensors');
    expect(s.copied.sort()).toEqual(['ids', 'scale']);
    const b = readFileSync(out);
    const n = Number(b.readBigUInt64LE(0));
    expect(n % 8, 'the header is padded to 8 bytes').toBe(0);
    expect(JSON.parse(b.subarray(8, 8 + n).toString()).__metadata__).toEqual({ format: 'np', note: 'fixture' });
    const t = tensorsOf(b);
    expect(t.get('wide')).toMatchObject({ dtype: 'F32', shape: [2, 16] });
    expect(sameBits(f32(t.get('wide')!.data), expected('float64', 32, 16))).toBe(true);
    expect(sameBits(f32(t.get('acts')!.data), expected('float32', 240, 16))).toBe(true);
    expect(sameBits(u16(t.get('half')!.data), expected('float16', 32, 8))).toBe(true);
    expect(sameBits(u16(t.get('brain')!.data), expected('bfloat16', 24, 8))).toBe(true);
    const src = tensorsOf(readFileSync(join(FIX, 'tensors.safetensors')));
    expect(t.get('ids')!.data.equals(src.get('ids')!.data)).toBe(true);
    expect(t.get('scale')).toMatchObject({ dtype: 'F32', shape: [] });
    // Every tensor's data starts at a multiple of its element size, as the package lays them out.
    for (const [k, v] of t) expect(v.data.byteOffset % { F32: 4, F16: 2, BF16: 2, I64: 8, F64: 8 }[v.dtype as 'F32']!, k).toBe(b.byteOffset % 8);
  });

  it('the writer lays out a header byte for byte as the safetensors package does', async () => {
    const bytes = readFileSync(join(FIX, 'tensors.safetensors'));
    const src = await openSource(join(FIX, 'tensors.safetensors'));
    const c = await safetensorsFormat.read(src, {});
    await src.close();
    const w = safetensorsFormat.writer(c.arrays.map((a) => ({ name: a.name, dtype: a.dtype, typeName: a.typeName, shape: a.shape, bytes: a.bytes! })), c.meta, 'x');
    const head = w.start();
    expect(Buffer.from(head).equals(bytes.subarray(0, head.length))).toBe(true);
  });

  it('--tensor, --out-dtype bfloat16, a weight by --weight-tensor; unknown names and ambiguous weights refused', () => {
    const out = join(dir, 'w.safetensors');
    const run = (...a: string[]) => spawnSync(process.execPath, [BIN, 'normalize', join(FIX, 'tensors.safetensors'), out, ...a], { encoding: 'utf8' });
    let r = run('--tensor', 'acts', '--out-dtype', 'bfloat16', '--weight', join(FIX, 'weights.safetensors'), '--weight-tensor', 'model.norm.weight');
    expect(r.status, r.stderr).toBe(0);
    const w = Float32Array.from({ length: 16 }, (_, i) => 1 + value(i) / 8);
    const t = tensorsOf(readFileSync(out));
    expect(t.get('acts')!.dtype).toBe('BF16');
    expect(sameBits(u16(t.get('acts')!.data), m.float32ToHalf(m.rmsNorm(Float32Array.from(values(240)), w), 'bfloat16'))).toBe(true);
    r = run('--weight', join(FIX, 'weights.safetensors'));
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/holds 2 float arrays; name the weight's with --weight-tensor \("model\.norm\.weight", "model\.final\.weight"\)/);
    r = run('--tensor', 'nope');
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/has no array named "nope" \(it has "ids", "wide", .*\)/);
    r = run('--tensor', 'ids');
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/array "ids" is I64: only float arrays of at least one axis are normalized/);
  });
});

describe('float64 .npy and --out-dtype', () => {
  it('NumPy\'s float64 is read as float32 (rounded to nearest) and written float32, within float32 of the float64 reference', async () => {
    const out = join(dir, 'f64.npy');
    const s = await normalizeFile(join(NPY, 'float64.npy'), out);
    expect(s).toMatchObject({ dtype: 'float64', outDtype: 'float32', shape: [2, 8] });
    const b = readFileSync(out);
    const h = parseNpyHeader(new Uint8Array(b), b.length, out);
    expect(h.dtype).toBe('float32');
    const y = f32(b.subarray(h.dataOffset));
    expect(firstBitDiff(y, m.rmsNorm(Float32Array.from(values(16)), null, { dim: 8 }))).toBe(-1);
    expect(mismatch(y, refForward(values(16), null, 8, 1e-6).y, yTolerance, 'y')).toBeNull();
  });

  it('float32 to bfloat16 and float16 to float32: widened exactly, normalized in float32, rounded once', async () => {
    const x = Float32Array.from({ length: 64 * 48 }, (_, i) => Math.sin(i * 0.7) * 3);
    writeFileSync(join(dir, 'x.npy'), Buffer.concat([npyHeader([64, 48]), Buffer.from(x.buffer)]));
    await expect(normalizeFile(join(dir, 'x.npy'), join(dir, 'x-bf16.npy'), { outDtype: 'bfloat16' })).rejects.toThrow(/NumPy has no bfloat16 dtype, so a \.npy cannot hold it/);
    const h = m.float32ToHalf(x, 'float16');
    writeFileSync(join(dir, 'h.f16'), Buffer.from(h.buffer));
    await normalizeFile(join(dir, 'h.f16'), join(dir, 'h.f32'), { format: 'raw', dtype: 'float16', dim: 48, outDtype: 'float32' });
    expect(firstBitDiff(f32(readFileSync(join(dir, 'h.f32'))), m.rmsNorm(m.halfToFloat32(h, 'float16'), null, { dim: 48 }))).toBe(-1);
    writeFileSync(join(dir, 'x.f32'), Buffer.from(x.buffer));
    await normalizeFile(join(dir, 'x.f32'), join(dir, 'x.bf16'), { format: 'raw', dim: 48, outDtype: 'bfloat16' });
    expect(sameBits(u16(readFileSync(join(dir, 'x.bf16'))), m.float32ToHalf(m.rmsNorm(x, null, { dim: 48 }), 'bfloat16'))).toBe(true);
    const e = await normalizeFile(join(dir, 'h.f16'), join(dir, 'no.f32'), { format: 'raw', dtype: 'float16', dim: 48, outDtype: 'float32', castingMode: 'llama' }).catch((err: Error) => err);
    expect(e).toBeInstanceOf(RangeError);
    expect((e as Error).message).toMatch(/castingMode 'llama' rounds to the input's dtype \(float16\), so options\.outDtype must be float16 too/);
  });
});

describe('told by content, never by name', () => {
  it('a safetensors file under any name is read as safetensors; a .npy name does not make a file .npy; raw only when asked', async () => {
    const st = readFileSync(join(FIX, 'tensors.safetensors'));
    writeFileSync(join(dir, 'model.bin'), st);
    writeFileSync(join(dir, 'looks.npy'), st);
    for (const name of ['model.bin', 'looks.npy']) {
      const s = await normalizeFile(join(dir, name), join(dir, `${name}.out`));
      expect(s.format, name).toBe('safetensors');
    }
    // The old mistake: a safetensors file taken for raw floats with --dim. Now refused unless --format raw.
    writeFileSync(join(dir, 'junk.dat'), 'PK-ish? no: plain text data\n');
    const r = spawnSync(process.execPath, [BIN, 'normalize', join(dir, 'junk.dat'), join(dir, 'junk.out'), '--dim', '2'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/junk\.dat: not a NumPy \.npy, an \.npz or a safetensors file \(it starts with "PK-ish\? "\); raw little-endian data is read with --format raw and --dim/);
    const e = await normalizeFile(join(dir, 'model.bin'), join(dir, 'x.out'), { format: 'npy' }).catch((err: Error) => err);
    expect((e as Error).message).toMatch(/model\.bin: not a NumPy \.npy file/);
  });

  it('an .npz or safetensors from a pipe is refused, naming why', () => {
    for (const name of ['savez.npz', 'tensors.safetensors']) {
      const r = spawnSync('sh', ['-c', `cat "${join(FIX, name)}" | "${process.execPath}" "${BIN}" normalize - "${join(dir, 'piped-' + name)}"`], { encoding: 'utf8' });
      expect(r.status, name).toBe(1);
      expect(r.stderr).toMatch(/must be a regular file, not a pipe or device/);
    }
  });
});

describe('the formats describe themselves', () => {
  it('each says whether it holds several arrays, has a header and can be split; messages and --help list them from FORMATS', async () => {
    const { FORMATS, FORMAT_NAMES } = await import('../dist/node/formats/index.js');
    const traits = Object.fromEntries(FORMATS.map((f) => [f.name, [f.several, f.header, f.splits]]));
    expect(traits).toEqual({ npy: [false, true, true], npz: [true, true, false], safetensors: [true, true, false], raw: [false, false, true] });
    // Every format with a header is named where a file is not recognized, and every format in --help's --format line.
    const dir = mkdtempSync(join(tmpdir(), 'rmsnorm-formats-'));
    try {
      writeFileSync(join(dir, 'junk.dat'), 'plain text\n');
      const r = spawnSync(process.execPath, [BIN, 'normalize', join(dir, 'junk.dat'), join(dir, 'junk.out')], { encoding: 'utf8' });
      for (const f of FORMATS) expect(r.stderr).toContain(f.header ? f.title : `--format ${f.name}`);
      const help = spawnSync(process.execPath, [BIN, '--help'], { encoding: 'utf8' }).stdout;
      const line = help.split('\n').find((l) => l.trimStart().startsWith('--format F'))!;
      for (const n of FORMAT_NAMES) expect(line).toContain(n);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
