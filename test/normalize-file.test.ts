/**
 * `normalizeFile` and the `rmsnorm-wasm normalize` command (float32, and float16 /
 * bfloat16 with `dtype`): results against the float64 reference and the sync API's bits, the
 * formats, the summary and progress, and every way it must fail — each with a clear message, a non-zero exit code and the output path left
 * as it was (no temporary file behind).
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRmsNorm, type RmsNorm } from '../dist/index.js';
import { createNormalizeStream, normalizeFile, NormalizeError, npyHeader, parseNpyHeader } from '../dist/node/index.js';
import { firstBitDiff, mismatch, refForward, rstdTolerance, testRows, testWeight, yTolerance } from '../shared/reference.js';

const BIN = new URL('../bundle/node/bin.js', import.meta.url).pathname;
const FIX = new URL('./fixtures/npy/', import.meta.url).pathname;
let dir: string;
let m: RmsNorm;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rmsnorm-file-'));
  m = await loadRmsNorm('simd');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function writeNpy(path: string, shape: number[], data: Float32Array): void {
  writeFileSync(path, Buffer.concat([Buffer.from(npyHeader(shape)), Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}
function readNpy(path: string): { shape: number[]; data: Float32Array } {
  const b = new Uint8Array(readFileSync(path));
  const h = parseNpyHeader(b, b.length, path);
  return { shape: h.shape, data: new Float32Array(b.slice(h.dataOffset).buffer) };
}
/** A half-precision .npy: its header (descr and shape) and its data's bit patterns. */
function readNpy16(path: string): { descr: string; dtype: string; shape: number[]; bits: Uint16Array } {
  const b = new Uint8Array(readFileSync(path));
  const h = parseNpyHeader(b, b.length, path);
  const descr = /'descr': '([^']*)'/.exec(new TextDecoder('latin1').decode(b.subarray(0, h.dataOffset)))![1]!;
  return { descr, dtype: h.dtype, shape: h.shape, bits: new Uint16Array(b.slice(h.dataOffset).buffer) };
}
/** The first index where two arrays of half bit patterns differ (-1: none; the shorter length when only the lengths do). */
function firstHalfDiff(a: Uint16Array, b: Uint16Array): number {
  expect(a).toBeInstanceOf(Uint16Array);
  expect(b).toBeInstanceOf(Uint16Array);
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}
/** A Buffer's bytes as half bit patterns (a copy: a small Buffer may sit at any offset of a shared pool). */
const u16 = (b: Buffer) => new Uint16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
const bytesOf = (a: Float32Array | Uint16Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
function run(...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
/** Files in `d` other than `keep`: a temporary left behind would show here. */
const others = (d: string, keep: string[]) => readdirSync(d).filter((f) => !keep.includes(f));

describe('results', () => {
  it('npy (3-d) with a weight file, offset, partial and rstd: the sync API bits, within float32 of float64; the checksum is the file\'s', async () => {
    const rows = 300;
    const dim = 517;
    const x = testRows(rows, dim, 1);
    const w = testWeight(dim, 2);
    const inp = join(dir, 'a.npy');
    writeNpy(inp, [3, 100, dim], x);
    writeNpy(join(dir, 'w.npy'), [dim], w);
    const progress: number[] = [];
    const s = await normalizeFile(inp, join(dir, 'a-out.npy'), {
      weight: join(dir, 'w.npy'),
      offset: 1,
      partial: 0.5,
      rstd: join(dir, 'a-rstd.npy'),
      chunkBytes: 40_000, // many chunks, the last one short
      threads: 2,
      checksum: true,
      onProgress: (p) => progress.push(p.rows),
    });
    expect(s.sha256).toBe(createHash('sha256').update(readFileSync(join(dir, 'a-out.npy'))).digest('hex'));
    expect(s.outputBytes).toBe(readFileSync(join(dir, 'a-out.npy')).length);
    expect(s).toMatchObject({ rows, dim, shape: [3, 100, dim], format: 'npy', dtype: 'float32', bytes: 4 * rows * dim, threads: 2 });
    expect(progress[progress.length - 1]).toBe(rows);
    expect(progress.length).toBe(Math.ceil(rows / Math.floor(40_000 / (4 * dim))));
    const out = readNpy(join(dir, 'a-out.npy'));
    expect(out.shape).toEqual([3, 100, dim]);
    const rs = readNpy(join(dir, 'a-rstd.npy'));
    expect(rs.shape).toEqual([3, 100]);
    const rstd = new Float32Array(rows);
    expect(firstBitDiff(out.data, m.rmsNorm(x, w, { offset: 1, partial: 0.5, rstd }))).toBe(-1);
    expect(firstBitDiff(rs.data, rstd)).toBe(-1);
    const ref = refForward(x, w, dim, 1e-6, { offset: 1, stat: Math.ceil(dim / 2) });
    expect(mismatch(out.data, ref.y, yTolerance, 'y')).toBeNull();
    expect(mismatch(rs.data, ref.rstd, rstdTolerance, 'rstd')).toBeNull();
    expect(readFileSync(inp).equals(Buffer.concat([Buffer.from(npyHeader([3, 100, dim])), Buffer.from(x.buffer)]))).toBe(true);
  });

  it('NumPy-written files, versions 1.0, 2.0, 3.0 and a 1-d array; raw with --dim through the command', () => {
    for (const name of ['v1.npy', 'v2.npy', 'v3.npy', 'one-row.npy']) {
      const out = join(dir, `out-${name}`);
      const r = run('normalize', join(FIX, name), out, '--quiet');
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout + r.stderr).toBe('');
      const a = readNpy(join(FIX, name));
      const b = readNpy(out);
      expect(b.shape).toEqual(a.shape);
      expect(firstBitDiff(b.data, m.rmsNorm(a.data, null, { dim: a.shape[a.shape.length - 1] }))).toBe(-1);
    }
    const x = testRows(40, 96, 3);
    writeFileSync(join(dir, 'r.f32'), Buffer.from(x.buffer));
    const r = run('normalize', join(dir, 'r.f32'), join(dir, 'r-out.f32'), '--format', 'raw', '--dim', '96', '--eps', '1e-3', '--json');
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout);
    expect(summary).toMatchObject({ rows: 40, dim: 96, format: 'raw', dtype: 'float32', bytes: 40 * 96 * 4 });
    expect(summary.gbPerS).toBeGreaterThan(0);
    const got = new Float32Array(readFileSync(join(dir, 'r-out.f32')).buffer.slice(0));
    expect(firstBitDiff(got, m.rmsNorm(x, null, { dim: 96, eps: 1e-3 }))).toBe(-1);
  });

  it('piped (not a terminal): one summary line on stdout, nothing on stderr; --help and --version', () => {
    const r = run('normalize', join(FIX, 'v1.npy'), join(dir, 'p.npy'), '--weight', join(FIX, 'weight.npy'));
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    // A tiny input reads in bytes and a rate with a unit that fits it (never "0.00 GB/s").
    expect(r.stdout).toMatch(/^normalized 15 rows × 16 \(float32, 960 B\) in \d+(\.\d+)? m?s: \d+(\.\d+)? [kMG]?B\/s on \d threads? → .*p\.npy\n$/);
    expect(r.stdout).not.toMatch(/ 0\.00 /);
    expect(run('--help').stdout).toMatch(/^Usage: rmsnorm-wasm normalize IN OUT/);
    expect(run('--version').stdout.trim()).toBe(JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version);
  });

  it('usage errors are one line that points to --help; negative values are values; --json numbers are rounded', () => {
    for (const args of [['normalize'], ['normalize', 'a', 'b', '--weigth', 'w'], ['normalize', 'a', 'b', '--dtype', 'float64']]) {
      const r = run(...args);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^rmsnorm-wasm: [^\n]+ \(see rmsnorm-wasm --help\)\n$/);
    }
    expect(run('normalize', 'a', 'b', '--weigth', 'w').stderr).toMatch(/^rmsnorm-wasm: unknown option --weigth \(/);
    expect(run('normalize', 'a', 'b', '--eps').stderr).toMatch(/^rmsnorm-wasm: --eps needs a value \(/);
    expect(run('normalize', 'a', 'b', '--quiet=yes').stderr).toMatch(/^rmsnorm-wasm: --quiet takes no value \(/);
    const out = join(dir, 'neg.npy');
    const r = run('normalize', join(FIX, 'v1.npy'), out, '--eps', '1e-3', '--json');
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout) as { seconds: number; gbPerS: number };
    for (const v of [summary.seconds, summary.gbPerS]) expect(v).toBe(Number(v.toPrecision(4)));
    const a = readNpy(join(FIX, 'v1.npy'));
    const dim = a.shape[a.shape.length - 1]!;
    const w = new Float32Array(dim).fill(2);
    // offset -1 with a weight of 2s: a gain of 1, the plain RMSNorm.
    const noWeight = run('normalize', join(FIX, 'v1.npy'), out, '--offset', '-1', '--quiet');
    expect(noWeight.code).toBe(2);
    expect(noWeight.stderr).toMatch(/^rmsnorm-wasm: --offset \(-1\) needs a weight.* \(see rmsnorm-wasm --help\)\n$/);
    writeFileSync(join(dir, 'w2.f32'), Buffer.from(w.buffer));
    expect(run('normalize', join(FIX, 'v1.npy'), out, '--weight', join(dir, 'w2.f32'), '--offset', '-1', '--quiet').code).toBe(0);
    expect(firstBitDiff(readNpy(out).data, m.rmsNorm(a.data, w, { offset: -1 }))).toBe(-1);
  });

  it('--in-place replaces the input through a temporary file', () => {
    const p = join(dir, 'inplace.npy');
    const x = testRows(10, 32, 4);
    writeNpy(p, [10, 32], x);
    expect(run('normalize', p, p).code).toBe(1);
    expect(readNpy(p).data).toEqual(x);
    expect(run('normalize', p, p, '--in-place', '--quiet').code).toBe(0);
    expect(firstBitDiff(readNpy(p).data, m.rmsNorm(x, null, { dim: 32 }))).toBe(-1);
  });

  it('the Transform stream: chunks of odd sizes give the sync API bits; an input ending mid-row errors', async () => {
    const dim = 33;
    const x = testRows(50, dim, 5);
    const w = testWeight(dim, 6);
    const bytes = Buffer.from(x.buffer);
    const parts: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += 7) parts.push(bytes.subarray(i, i + 7));
    const out: Buffer[] = [];
    await pipeline(
      Readable.from(parts),
      createNormalizeStream({ weight: w, offset: 1 }),
      new Writable({
        write(c: Buffer, _e, cb) {
          out.push(c);
          cb();
        },
      }),
    );
    const y = new Float32Array(Buffer.concat(out).buffer.slice(0));
    expect(firstBitDiff(y, m.rmsNorm(x, w, { offset: 1 }))).toBe(-1);
    await expect(pipeline(Readable.from([bytes.subarray(0, 10)]), createNormalizeStream({ dim }), new Writable({ write: (_c, _e, cb) => cb() }))).rejects.toThrow(
      /ended mid-row \(10 bytes left over; rows are 132 bytes\)/,
    );
    expect(() => createNormalizeStream({ dim, partial: 0 })).toThrow(RangeError);
  });
});

describe('half precision (dtype float16 / bfloat16): the sync API bits, in the input dtype and format', () => {
  it('a NumPy-written float16 .npy (3-d) with its float16 weight: a "<f2" .npy of the same shape, rstd float32', async () => {
    const x = readNpy16(join(FIX, 'f16-3d.npy'));
    const w = readNpy16(join(FIX, 'weight-f16.npy'));
    expect([x.descr, w.descr]).toEqual(['<f2', '<f2']);
    const out = join(dir, 'h-out.npy');
    const s = await normalizeFile(join(FIX, 'f16-3d.npy'), out, { weight: join(FIX, 'weight-f16.npy'), rstd: join(dir, 'h-rstd.npy'), threads: 2 });
    expect(s).toMatchObject({ format: 'npy', dtype: 'float16', rows: 15, dim: 8, shape: [3, 5, 8], bytes: 2 * 15 * 8 });
    const y = readNpy16(out);
    expect(y.descr).toBe('<f2');
    expect(y.dtype).toBe('float16');
    expect(y.shape).toEqual([3, 5, 8]);
    const rstd = new Float32Array(15);
    const want = m.rmsNorm(x.bits, w.bits, { dtype: 'float16', rstd });
    expect(want).toBeInstanceOf(Uint16Array);
    expect(firstHalfDiff(y.bits, want)).toBe(-1);
    const rs = readNpy(join(dir, 'h-rstd.npy'));
    expect(rs.shape).toEqual([3, 5]);
    expect(firstBitDiff(rs.data, rstd)).toBe(-1);
    // The header is the one NumPy writes for this array (the data follows at once).
    expect(readFileSync(out).subarray(0, 128).equals(readFileSync(join(FIX, 'f16-3d.npy')).subarray(0, 128))).toBe(true);
  });

  it('a float16 .npy across many chunks on 2 threads, float32 weight, offset, partial: bits, progress in half bytes', async () => {
    const rows = 1000;
    const dim = 517;
    const x = m.float32ToHalf(testRows(rows, dim, 11), 'float16');
    const w = testWeight(dim, 12);
    const inp = join(dir, 'h-big.npy');
    writeFileSync(inp, Buffer.concat([Buffer.from(npyHeader([rows, dim], 'float16')), bytesOf(x)]));
    const progress: { bytes: number; totalBytes: number }[] = [];
    const s = await normalizeFile(inp, join(dir, 'h-big-out.npy'), {
      weight: w,
      offset: 1,
      partial: 0.5,
      dtype: 'float16', // agrees with the header
      chunkBytes: 400_000, // 386 rows a chunk: sharded chunks and a short last one
      threads: 2,
      onProgress: (p) => progress.push({ bytes: p.bytes, totalBytes: p.totalBytes }),
    });
    expect(s).toMatchObject({ dtype: 'float16', rows, dim, bytes: 2 * rows * dim, threads: 2 });
    expect(progress.length).toBe(3);
    expect(progress[progress.length - 1]).toEqual({ bytes: 2 * rows * dim, totalBytes: 2 * rows * dim });
    const y = readNpy16(join(dir, 'h-big-out.npy'));
    expect(y.shape).toEqual([rows, dim]);
    expect(firstHalfDiff(y.bits, m.rmsNorm(x, w, { dtype: 'float16', offset: 1, partial: 0.5 }))).toBe(-1);
  });

  it('a raw bfloat16 file (dtype bfloat16) with a raw bfloat16 weight (weightDtype), castingMode llama; and a Float32Array weight', async () => {
    const rows = 300;
    const dim = 256;
    const x = m.float32ToHalf(testRows(rows, dim, 13), 'bfloat16');
    const w32 = testWeight(dim, 14);
    const w = m.float32ToHalf(w32, 'bfloat16');
    const inp = join(dir, 'h.bf16');
    writeFileSync(inp, bytesOf(x));
    writeFileSync(join(dir, 'w.bf16'), bytesOf(w));
    const s = await normalizeFile(inp, join(dir, 'h-out.bf16'), { format: 'raw', dtype: 'bfloat16', weight: join(dir, 'w.bf16'), weightDtype: 'bfloat16', castingMode: 'llama', chunkBytes: 20_000, threads: 2 });
    expect(s).toMatchObject({ format: 'raw', dtype: 'bfloat16', rows, dim, shape: [rows, dim], bytes: 2 * rows * dim });
    const y = u16(readFileSync(join(dir, 'h-out.bf16')));
    expect(y.length).toBe(rows * dim);
    const llama = m.rmsNorm(x, w, { dtype: 'bfloat16', castingMode: 'llama' });
    expect(firstHalfDiff(y, llama)).toBe(-1);
    // The casting mode reached the kernel: llama's extra rounding changes some elements here.
    expect(firstHalfDiff(llama, m.rmsNorm(x, w, { dtype: 'bfloat16' }))).toBeGreaterThanOrEqual(0);
    await normalizeFile(inp, join(dir, 'h-out2.bf16'), { format: 'raw', dtype: 'bfloat16', weight: w32 });
    const y2 = u16(readFileSync(join(dir, 'h-out2.bf16')));
    expect(firstHalfDiff(y2, m.rmsNorm(x, w32, { dtype: 'bfloat16' }))).toBe(-1);
  });

  it('refused, with no output and no temporary: a dtype the header contradicts; ">f2"; a Uint16Array weight without its dtype; a bad dtype', async () => {
    const work = join(dir, 'half-refused');
    mkdirSync(work);
    const out = join(work, 'out.npy');
    const fail = (p: Promise<unknown>) => p.then(() => new Error('accepted'), (e: unknown) => e as Error);
    let e = await fail(normalizeFile(join(FIX, 'f16-3d.npy'), out, { dtype: 'bfloat16' }));
    expect(e).toBeInstanceOf(NormalizeError);
    expect(e.message).toMatch(/f16-3d\.npy: the header says float16 \('<f2'\), but options\.dtype bfloat16 was given/);
    e = await fail(normalizeFile(join(FIX, 'v1.npy'), out, { dtype: 'float16' }));
    expect(e).toBeInstanceOf(NormalizeError);
    expect(e.message).toMatch(/header says float32 \('<f4'\), but options\.dtype float16 was given/);
    e = await fail(normalizeFile(join(FIX, 'big-endian-f16.npy'), out));
    expect(e).toBeInstanceOf(NormalizeError);
    expect(e.message).toMatch(/big-endian-f16\.npy: unsupported dtype ">f2" \(big-endian float16/);
    e = await fail(normalizeFile(join(FIX, 'v1.npy'), out, { weight: new Uint16Array(16) }));
    expect(e).toBeInstanceOf(TypeError);
    expect(e.message).toMatch(/weight is a Uint16Array: say what it holds with options\.weightDtype/);
    e = await fail(normalizeFile(join(FIX, 'v1.npy'), out, { dtype: 'float64' as 'float32' }));
    expect(e).toBeInstanceOf(TypeError);
    expect(e.message).toMatch(/normalizeFile: options\.dtype must be 'float32', 'float16' or 'bfloat16', got string "float64"/);
    e = await fail(normalizeFile(join(FIX, 'f16-3d.npy'), out, { castingMode: 'torch' as 'none' }));
    expect(e).toBeInstanceOf(TypeError);
    expect(e.message).toMatch(/options\.castingMode must be 'none', 'llama' or 'gemma'/);
    expect(readdirSync(work)).toEqual([]);
  });

  it('the command: --dtype float16 on a raw file (JSON summary says float16), --dtype bfloat16 with --casting-mode llama', () => {
    const rows = 64;
    const dim = 96;
    const x = m.float32ToHalf(testRows(rows, dim, 15), 'float16');
    writeFileSync(join(dir, 'c.f16'), bytesOf(x));
    let r = run('normalize', join(dir, 'c.f16'), join(dir, 'c-out.f16'), '--format', 'raw', '--dim', String(dim), '--dtype', 'float16', '--eps', '1e-3', '--json');
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ format: 'raw', dtype: 'float16', rows, dim, bytes: 2 * rows * dim });
    let y = u16(readFileSync(join(dir, 'c-out.f16')));
    expect(firstHalfDiff(y, m.rmsNorm(x, null, { dtype: 'float16', dim, eps: 1e-3 }))).toBe(-1);
    // The same bytes as bfloat16, with a float32 .npy weight: the summary line names the dtype.
    const w = testWeight(dim, 16);
    writeNpy(join(dir, 'c-w.npy'), [dim], w);
    r = run('normalize', join(dir, 'c.f16'), join(dir, 'c-out.bf16'), '--format', 'raw', '--dtype', 'bfloat16', '--weight', join(dir, 'c-w.npy'), '--casting-mode', 'llama');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^normalized ${rows} rows × ${dim} \\(bfloat16, 12\\.3 kB\\) in `));
    y = u16(readFileSync(join(dir, 'c-out.bf16')));
    expect(firstHalfDiff(y, m.rmsNorm(x, w, { dtype: 'bfloat16', castingMode: 'llama' }))).toBe(-1);
    // A float16 .npy needs no --dtype; a matching one is accepted.
    r = run('normalize', join(FIX, 'f16-3d.npy'), join(dir, 'c-out.npy'), '--dtype', 'float16', '--json');
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ format: 'npy', dtype: 'float16', shape: [3, 5, 8], bytes: 240 });
    expect(run('--help').stdout).toMatch(/--dtype T +float32, float16 or bfloat16/);
  });

  it('the Transform stream with dtype bfloat16: chunks cut mid-element give the sync API bits', async () => {
    const dim = 33;
    const x = m.float32ToHalf(testRows(50, dim, 17), 'bfloat16');
    const w = m.float32ToHalf(testWeight(dim, 18), 'bfloat16');
    const bytes = bytesOf(x);
    const parts: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += 7) parts.push(bytes.subarray(i, i + 7));
    const out: Buffer[] = [];
    await pipeline(
      Readable.from(parts),
      createNormalizeStream({ weight: w, dtype: 'bfloat16', offset: 1 }),
      new Writable({
        write(c: Buffer, _e, cb) {
          out.push(c);
          cb();
        },
      }),
    );
    const y = u16(Buffer.concat(out));
    expect(firstHalfDiff(y, m.rmsNorm(x, w, { dtype: 'bfloat16', offset: 1 }))).toBe(-1);
    await expect(pipeline(Readable.from([bytes.subarray(0, 11)]), createNormalizeStream({ dim, dtype: 'float16' }), new Writable({ write: (_c, _e, cb) => cb() }))).rejects.toThrow(
      /ended mid-row \(11 bytes left over; rows are 66 bytes\)/,
    );
    expect(() => createNormalizeStream({ dim, dtype: 'float64' as 'float32' })).toThrow(/options\.dtype must be 'float32', 'float16' or 'bfloat16'/);
    expect(() => createNormalizeStream({ weight: new Uint16Array(dim) })).toThrow(/weight is a Uint16Array: say what it holds/);
  });
});

describe('failures: a clear message, exit code 1 (2 for usage), the output left as it was', () => {
  let sub: string;
  const OUT = 'out.npy';
  const PREVIOUS = 'the previous output';
  beforeAll(() => {
    sub = join(dir, 'fail');
    mkdirSync(sub);
  });
  const cases: [string, () => string[], RegExp, number?][] = [
    ['missing input', () => ['normalize', join(sub, 'nope.npy'), join(sub, OUT)], /cannot read .*nope\.npy: no such file or directory \(ENOENT\)/],
    ['not an npy', () => (writeFileSync(join(sub, 'bad.npy'), 'hello world, not npy'), ['normalize', join(sub, 'bad.npy'), join(sub, OUT)]), /bad\.npy: not a NumPy \.npy, an \.npz or a safetensors file \(it starts with "hello wo"\); raw little-endian data is read with --format raw and --dim/],
    ['malformed header', () => {
      const b = Buffer.from(readFileSync(join(FIX, 'v1.npy')));
      b.write("{'descr': '<f4', 'shape': (3, 5, 16), }", 10, 'latin1');
      writeFileSync(join(sub, 'mal.npy'), b);
      return ['normalize', join(sub, 'mal.npy'), join(sub, OUT)];
    }, /malformed \.npy header/],
    ['truncated header', () => (writeFileSync(join(sub, 'th.npy'), readFileSync(join(FIX, 'v1.npy')).subarray(0, 40)), ['normalize', join(sub, 'th.npy'), join(sub, OUT)]), /truncated \.npy header/],
    ['truncated data', () => (writeFileSync(join(sub, 'td.npy'), readFileSync(join(FIX, 'v1.npy')).subarray(0, 1000)), ['normalize', join(sub, 'td.npy'), join(sub, OUT)]), /\(truncated\)/],
    ['Fortran order', () => ['normalize', join(FIX, 'fortran.npy'), join(sub, OUT)], /Fortran-order arrays are not supported/],
    ['big-endian', () => ['normalize', join(FIX, 'big-endian.npy'), join(sub, OUT)], /unsupported dtype ">f4" \(big-endian/],
    ['big-endian float16', () => ['normalize', join(FIX, 'big-endian-f16.npy'), join(sub, OUT)], /unsupported dtype ">f2" \(big-endian float16/],
    ['--dtype disagreeing with the npy header', () => ['normalize', join(FIX, 'f16-3d.npy'), join(sub, OUT), '--dtype', 'bfloat16'], /f16-3d\.npy: the header says float16 \('<f2'\), but --dtype bfloat16 was given/],
    ['--dtype float16 on a float32 npy', () => ['normalize', join(FIX, 'v2.npy'), join(sub, OUT), '--dtype', 'float16'], /v2\.npy: the header says float32 \('<f4'\), but --dtype float16 was given/],
    ['--weight-dtype disagreeing with the weight npy', () => ['normalize', join(FIX, 'f16-3d.npy'), join(sub, OUT), '--weight', join(FIX, 'weight-f16.npy'), '--weight-dtype', 'float32'], /weight-f16\.npy: the header says float16 \('<f2'\), but --weight-dtype float32 was given/],
    ['raw float16 size not whole rows', () => (writeFileSync(join(sub, 'r.f16'), Buffer.alloc(2 * 15)), ['normalize', join(sub, 'r.f16'), join(sub, 'out.f16'), '--format', 'raw', '--dim', '4', '--dtype', 'float16']), /its size \(30 bytes\) is not a whole number of rows of 4 float16 \(8 bytes each\)/],
    ['raw bfloat16 weight of an odd size', () => (writeFileSync(join(sub, 'w.bf16'), Buffer.alloc(9)), ['normalize', join(FIX, 'v2.npy'), join(sub, OUT), '--weight', join(sub, 'w.bf16'), '--weight-dtype', 'bfloat16']), /a raw weight of bfloat16 must be a multiple of 2 bytes, got 9 bytes/],
    ['--dtype not a dtype', () => ['normalize', join(FIX, 'v2.npy'), join(sub, OUT), '--dtype', 'float64'], /--dtype must be float32, float16 or bfloat16, got "float64"/, 2],
    ['--casting-mode not a mode', () => ['normalize', join(FIX, 'v2.npy'), join(sub, OUT), '--casting-mode', 'torch'], /--casting-mode must be none, llama or gemma, got "torch"/, 2],
    ['weight of the wrong length', () => ['normalize', join(FIX, 'v2.npy'), join(sub, OUT), '--weight', join(FIX, 'weight.npy')], /the weight has 16 elements, but the rows of .*v2\.npy have 24/],
    ['raw size not whole rows', () => (writeFileSync(join(sub, 'r.f32'), Buffer.alloc(4 * 100)), ['normalize', join(sub, 'r.f32'), join(sub, 'out.f32'), '--format', 'raw', '--dim', '7']), /not a whole number of rows of 7 float32/],
    ['raw without --dim', () => ['normalize', join(sub, 'r.f32'), join(sub, 'out.f32'), '--format', 'raw'], /a raw file needs --dim/],
    ['--dim disagreeing with the npy', () => ['normalize', join(FIX, 'v2.npy'), join(sub, OUT), '--dim', '5'], /its rows have 24 elements .* but --dim 5 was given/],
    ['bad eps', () => ['normalize', join(FIX, 'v2.npy'), join(sub, OUT), '--eps=-1'], /--eps must be >= 0/, 2],
    ['bad partial', () => ['normalize', join(FIX, 'v2.npy'), join(sub, OUT), '--partial', '1.5'], /--partial must be a number in \(0, 1\]/, 2],
    ['unwritable output directory', () => ['normalize', join(FIX, 'v2.npy'), join(sub, 'no-such-dir', OUT)], /cannot write .*no-such-dir.*ENOENT/],
    ['output is the input', () => ['normalize', join(FIX, 'v2.npy'), join(FIX, 'v2.npy')], /is the input file; pass --in-place/],
    ['unknown flag', () => ['normalize', join(FIX, 'v2.npy'), join(sub, OUT), '--weigth', 'w'], /unknown option --weigth/, 2],
    ['no command', () => [], /no command given/, 2],
    ['--threads not an integer', () => ['normalize', join(FIX, 'v2.npy'), join(sub, OUT), '--threads', 'two'], /--threads must be an integer/, 2],
    // A negative value after a flag is its value, and errors from the API name the flag.
    ['--eps -1 (a negative value)', () => ['normalize', join(FIX, 'v2.npy'), join(sub, OUT), '--eps', '-1'], /^rmsnorm-wasm: --eps must be >= 0.* \(see rmsnorm-wasm --help\)\n$/, 2],
    ['--threads 0', () => ['normalize', join(FIX, 'v2.npy'), join(sub, OUT), '--threads', '0'], /^rmsnorm-wasm: --threads must be an integer from 1 to \d+, got 0 \(see rmsnorm-wasm --help\)\n$/, 2],
  ];
  it.each(cases)('%s', (_name, args, msg, code = 1) => {
    writeFileSync(join(sub, OUT), PREVIOUS);
    const before = readdirSync(sub);
    const r = run(...args());
    expect(r.code).toBe(code);
    expect(r.stderr).toMatch(msg);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(r.stdout).toBe('');
    expect(readFileSync(join(sub, OUT), 'utf8')).toBe(PREVIOUS);
    const after = readdirSync(sub).filter((f) => !before.includes(f));
    expect(after.filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  it('a full disk (a 1 MiB tmpfs): ENOSPC named, no output, no temporary left', async (ctx) => {
    const mnt = join(dir, 'small');
    mkdirSync(mnt);
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt]).status === 0;
    // Mounting needs root (CI here runs as root); elsewhere this case cannot be made.
    if (!mounted) ctx.skip();
    try {
      const inp = join(dir, 'big.f32');
      writeFileSync(inp, Buffer.from(testRows(1024, 1024, 7).buffer)); // 4 MiB
      writeFileSync(join(mnt, 'out.f32'), PREVIOUS);
      const err = await normalizeFile(inp, join(mnt, 'out.f32'), { format: 'raw', dim: 1024, chunkBytes: 1 << 18 }).catch((e: unknown) => e as Error);
      expect(err).toBeInstanceOf(NormalizeError);
      expect((err as Error).message).toMatch(/no space left on the device writing .*out\.f32/);
      expect(readFileSync(join(mnt, 'out.f32'), 'utf8')).toBe(PREVIOUS);
      expect(others(mnt, ['out.f32'])).toEqual([]);
    } finally {
      spawnSync('umount', [mnt]);
    }
  });

  it('abort (AbortSignal): rejects with the reason, no output, no temporary', async () => {
    const inp = join(dir, 'abort.f32');
    writeFileSync(inp, Buffer.from(testRows(2000, 512, 8).buffer));
    const ac = new AbortController();
    const out = join(sub, 'aborted.f32');
    const err = await normalizeFile(inp, out, {
      format: 'raw',
      dim: 512,
      chunkBytes: 1 << 16,
      signal: ac.signal,
      onProgress: (p) => {
        if (p.rows >= 64) ac.abort(new Error('stop here'));
      },
    }).catch((e: unknown) => e as Error);
    expect((err as Error).message).toBe('stop here');
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(sub).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  it('Ctrl-C (SIGINT): exits 130, removes the temporary, writes no output', async () => {
    const inp = join(dir, 'sparse.f32');
    writeFileSync(inp, '');
    truncateSync(inp, 2 ** 31); // 2 GiB of zeros, sparse: read from no disk, long enough to interrupt
    const work = join(dir, 'sigint');
    mkdirSync(work);
    const child = spawn(process.execPath, [BIN, 'normalize', inp, join(work, 'out.f32'), '--format', 'raw', '--dim', '4096'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    // Interrupt once it is writing (its temporary exists).
    for (let i = 0; i < 400 && readdirSync(work).length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(readdirSync(work).length).toBe(1);
    child.kill('SIGINT');
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    expect(code).toBe(130);
    expect(stderr).toMatch(/stopped by SIGINT; no output was written/);
    expect(readdirSync(work)).toEqual([]);
  });
});
