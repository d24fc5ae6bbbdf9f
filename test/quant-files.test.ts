/**
 * Quantized outputs of the file functions and the command (`outDtype: 'int8' | 'float8_e4m3'`):
 * the codes and row scales are the sync API's bits in every format (`NAME_scale` arrays in an
 * `.npz` or safetensors file, `OUT.scale.npy` beside a `.npy`), on both file paths (the workers
 * reading and writing at positions, and front to back), for every input dtype; the refusals
 * name what cannot be written before anything is; the pair of a `.npy` and its scales is never
 * seen mismatched — a process killed (by strace's fault injection) at each of the system calls
 * that publish it leaves either no output or the matching pair; a dataset records the pair as
 * one output, resumes it and redoes it when either file changed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { crc32 } from 'node:zlib';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRmsNorm, type RmsNorm } from '../dist/index.js';
import { normalizeDataset, normalizeFile, NormalizeError, npyHeader, parseNpyHeader, type DatasetRecord } from '../dist/node/index.js';
import { runWorkProcess } from './work-process.js';
import { values as fixtureValues } from './format-values.js';

const FIX = new URL('./fixtures/formats/', import.meta.url).pathname;
const BIN = new URL('../bundle/node/bin.js', import.meta.url).pathname;
let dir: string;
let m: RmsNorm;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rmsnorm-quant-files-'));
  m = await loadRmsNorm('simd');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Quant = 'int8' | 'float8_e4m3';
/** The files' paths: the calling thread, front to back (no `threads`: a small file starts no pool), and the workers at positions. */
const PATHS = [{ name: 'front to back', threads: undefined }, { name: 'at positions', threads: 2 }] as const;

/** The format fixtures' first `n` values, as float32 (exact). */
const values = (n: number) => Float32Array.from(fixtureValues(n));

/** The sync API's quantized output of `x` (float32 values) stored as `dtype`, rows of `dim`: codes and row scales (none with `quantScale`). */
function expected(x: Float32Array, dtype: string, dim: number, outDtype: Quant, quantScale?: number): { q: Buffer; scales: Buffer | null } {
  const data = dtype === 'float32' || dtype === 'float64' ? x : m.float32ToHalf(x, dtype as 'float16');
  const rowScales = quantScale === undefined ? new Float32Array(x.length / dim) : undefined;
  const d = dtype === 'float64' ? 'float32' : (dtype as 'float32');
  const q = quantScale === undefined ? m.rmsNorm(data, null, { dim, dtype: d, outDtype, rowScales: rowScales! }) : m.rmsNorm(data, null, { dim, dtype: d, outDtype, quantScale });
  return { q: Buffer.from(q.buffer, q.byteOffset, q.byteLength), scales: rowScales ? Buffer.from(rowScales.buffer) : null };
}

/** The members of a zip of stored members (what the package writes), in order. */
function storedMembers(b: Buffer): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  let p = 0;
  while (b.readUInt32LE(p) === 0x04034b50) {
    const nameLen = b.readUInt16LE(p + 26);
    const extraLen = b.readUInt16LE(p + 28);
    const size = b.readUInt32LE(p + 22);
    const name = b.subarray(p + 30, p + 30 + nameLen).toString('utf8');
    const start = p + 30 + nameLen + extraLen;
    out.set(name, b.subarray(start, start + size));
    p = start + size + (b.readUInt16LE(p + 6) & 8 ? 16 : 0);
  }
  return out;
}

/** A `.npy`'s descr, shape and data (the descr read from the header text: parseNpyHeader reads float types only). */
function npyOf(b: Buffer): { descr: string; shape: number[]; data: Buffer } {
  const len = b.readUInt16LE(8);
  const dict = b.subarray(10, 10 + len).toString('latin1');
  const descr = /'descr': '([^']+)'/.exec(dict)![1]!;
  const shape = /'shape': \(([^)]*)\)/.exec(dict)![1]!.split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  return { descr, shape, data: b.subarray(10 + len) };
}

/** A safetensors file's tensors (dtype, shape, data), and their names in data order. */
function tensorsOf(b: Buffer): { tensors: Map<string, { dtype: string; shape: number[]; data: Buffer }>; order: string[] } {
  const n = Number(b.readBigUInt64LE(0));
  const header = JSON.parse(b.subarray(8, 8 + n).toString('utf8')) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const tensors = new Map<string, { dtype: string; shape: number[]; data: Buffer }>();
  for (const [k, v] of Object.entries(header)) {
    if (k !== '__metadata__') tensors.set(k, { dtype: v.dtype, shape: v.shape, data: b.subarray(8 + n + v.data_offsets[0], 8 + n + v.data_offsets[1]) });
  }
  const order = [...tensors.keys()].sort((a, c) => header[a]!.data_offsets[0] - header[c]!.data_offsets[0]);
  return { tensors, order };
}

/** A zip of stored members (as `np.savez` writes an .npz): local headers, data, central directory. */
function zipSync(members: [string, Buffer][]): Buffer {
  const local: Buffer[] = [];
  const central: Buffer[] = [];
  let at = 0;
  for (const [name, data] of members) {
    const n = Buffer.from(name);
    const crc = crc32(data);
    const h = Buffer.alloc(30);
    h.writeUInt32LE(0x04034b50, 0);
    h.writeUInt16LE(20, 4);
    h.writeUInt32LE(crc, 14);
    h.writeUInt32LE(data.length, 18);
    h.writeUInt32LE(data.length, 22);
    h.writeUInt16LE(n.length, 26);
    const c = Buffer.alloc(46);
    c.writeUInt32LE(0x02014b50, 0);
    c.writeUInt16LE(20, 4);
    c.writeUInt16LE(20, 6);
    c.writeUInt32LE(crc, 16);
    c.writeUInt32LE(data.length, 20);
    c.writeUInt32LE(data.length, 24);
    c.writeUInt16LE(n.length, 28);
    c.writeUInt32LE(at, 42);
    local.push(h, n, data);
    central.push(c, n);
    at += 30 + n.length + data.length;
  }
  const dirBytes = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(members.length, 8);
  end.writeUInt16LE(members.length, 10);
  end.writeUInt32LE(dirBytes.length, 12);
  end.writeUInt32LE(at, 16);
  return Buffer.concat([...local, dirBytes, end]);
}

const lead = (shape: number[]) => (shape.length > 1 ? shape.slice(0, -1) : [1]);
const sha256 = async (path: string) => (await import('node:crypto')).createHash('sha256').update(readFileSync(path)).digest('hex');

function writeNpy(path: string, shape: number[], x: Float32Array): void {
  writeFileSync(path, Buffer.concat([npyHeader(shape), Buffer.from(x.buffer, x.byteOffset, x.byteLength)]));
}

/** Rows with what quantization must get right: a row of zeros, one with an outlier, tiny and huge ones. */
function testData(rows: number, dim: number): Float32Array {
  const x = new Float32Array(rows * dim).map((_, i) => Math.sin(i * 0.37) * (1 + (i % 7)));
  x.fill(0, dim, 2 * dim);
  x[2 * dim + 3] = 1e4;
  for (let i = 3 * dim; i < 4 * dim; i++) x[i]! *= 1e-30;
  for (let i = 4 * dim; i < 5 * dim; i++) x[i]! *= 1e30;
  return x;
}

/** The command; with `strace`, its work process alone under strace (work-process.ts: no supervisor cleans up after the kill). */
function cli(args: string[], opts: { input?: Buffer; env?: Record<string, string>; strace?: string[] } = {}) {
  if (opts.strace) return runWorkProcess(args, { wrapper: ['strace', ...opts.strace, '--'], env: opts.env, input: opts.input });
  const r = spawnSync(process.execPath, [BIN, ...args], { input: opts.input, env: { ...process.env, ...opts.env }, timeout: 120_000 });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr.toString() };
}

describe('containers: the codes, and each array\'s scales as NAME_scale', () => {
  for (const path of PATHS) {
    for (const name of ['savez.npz', 'savez-compressed.npz']) {
      // (A deflated member is read front to back, also with threads.)
      it(`${name} to int8, ${path.name}: members acts, acts_scale, half, half_scale, wide, wide_scale, then the ones copied`, async () => {
        const out = join(dir, `q-${path.threads}-${name}`);
        const s = await normalizeFile(join(FIX, name), out, { outDtype: 'int8', threads: path.threads, chunkBytes: 256, checksum: true });
        expect(s.arrays.map((a) => [a.name, a.outDtype])).toEqual([['acts', 'int8'], ['half', 'int8'], ['wide', 'int8']]);
        expect(s.copied).toEqual(['ids.npy', 'scale.npy']);
        expect(s.sha256).toBe(await sha256(out));
        const members = storedMembers(readFileSync(out));
        expect([...members.keys()]).toEqual(['acts.npy', 'acts_scale.npy', 'half.npy', 'half_scale.npy', 'wide.npy', 'wide_scale.npy', 'ids.npy', 'scale.npy']);
        for (const [a, dtype, shape] of [['acts', 'float32', [3, 5, 16]], ['half', 'float16', [4, 8]], ['wide', 'float64', [2, 16]]] as const) {
          const n = shape.reduce((p, c) => p * c, 1);
          const want = expected(values(n), dtype, shape[shape.length - 1]!, 'int8');
          const q = npyOf(members.get(`${a}.npy`)!);
          expect([q.descr, q.shape]).toEqual(['|i1', shape]);
          expect(q.data.equals(want.q), a).toBe(true);
          const sc = npyOf(members.get(`${a}_scale.npy`)!);
          expect([sc.descr, sc.shape]).toEqual(['<f4', lead([...shape])]);
          expect(sc.data.equals(want.scales!), `${a}_scale`).toBe(true);
        }
      });
    }

    for (const outDtype of ['int8', 'float8_e4m3'] as const) {
      for (const quantScale of [undefined, 0.02]) {
        it(`tensors.safetensors to ${outDtype}${quantScale ? ' with a static scale' : ''}, ${path.name}: the codes; ${quantScale ? 'no scales' : 'NAME_scale (F32) before the data, as the format orders'}`, async () => {
          const out = join(dir, `q-${path.threads}-${outDtype}-${quantScale}.safetensors`);
          const s = await normalizeFile(join(FIX, 'tensors.safetensors'), out, { outDtype, quantScale, threads: path.threads, chunkBytes: 256, checksum: true });
          expect(s.sha256, 'the checksum of a file whose scales were written after the data behind them').toBe(await sha256(out));
          const { tensors, order } = tensorsOf(readFileSync(out));
          const names = ['acts', 'brain', 'half', 'wide'];
          expect([...tensors.keys()].sort()).toEqual([...names, 'ids', 'scale', ...(quantScale ? [] : names.map((n) => `${n}_scale`))].sort());
          if (!quantScale) expect(order.indexOf('acts_scale')).toBeLessThan(order.indexOf('acts'));
          for (const [a, dtype, shape] of [['acts', 'float32', [3, 5, 16]], ['brain', 'bfloat16', [3, 8]], ['half', 'float16', [4, 8]], ['wide', 'float64', [2, 16]]] as const) {
            const n = shape.reduce((p, c) => p * c, 1);
            const want = expected(values(n), dtype, shape[shape.length - 1]!, outDtype, quantScale);
            const t = tensors.get(a)!;
            expect([t.dtype, t.shape]).toEqual([outDtype === 'int8' ? 'I8' : 'F8_E4M3', shape]);
            expect(t.data.equals(want.q), a).toBe(true);
            if (quantScale) continue;
            const sc = tensors.get(`${a}_scale`)!;
            expect([sc.dtype, sc.shape]).toEqual(['F32', lead([...shape])]);
            expect(sc.data.equals(want.scales!), `${a}_scale`).toBe(true);
          }
        });
      }
    }
  }

  it('NumPy reads neither float8 nor a name the scales would take: refused before anything is written', async () => {
    const out = join(dir, 'refused.npz');
    writeFileSync(out, 'previous');
    await expect(normalizeFile(join(FIX, 'savez.npz'), out, { outDtype: 'float8_e4m3' })).rejects.toThrow(
      new NormalizeError(`${out}: array "acts": NumPy has no float8_e4m3 dtype, so a .npy cannot hold it (write float32, float16 or int8, or a raw or safetensors file)`),
    );
    // A container that has an array named as the scales of another.
    const x = join(dir, 'taken.safetensors');
    const header = JSON.stringify({ a: { dtype: 'F32', shape: [2, 4], data_offsets: [0, 32] }, a_scale: { dtype: 'F32', shape: [2], data_offsets: [32, 40] } }).padEnd(104, ' ');
    const h = Buffer.alloc(8);
    h.writeBigUInt64LE(BigInt(header.length));
    writeFileSync(x, Buffer.concat([h, Buffer.from(header), Buffer.alloc(40, 1)]));
    await expect(normalizeFile(x, out, { outDtype: 'int8' })).rejects.toThrow(
      `${x}: the scales of array "a" go to the array "a_scale", which it already has (give options.quantScale, or rename it)`,
    );
    // With only "a" normalized the name is still taken (a_scale is copied).
    await expect(normalizeFile(x, out, { outDtype: 'int8', tensors: ['a'] })).rejects.toThrow(/the scales of array "a" go to the array "a_scale"/);
    expect(readFileSync(out, 'utf8')).toBe('previous');
    expect(readdirSync(dir).filter((n) => n.startsWith('.refused'))).toEqual([]);
    // A static scale writes no scales: the name is free.
    const s = await normalizeFile(x, out, { outDtype: 'int8', quantScale: 0.5, tensors: ['a'] });
    expect(s.arrays.map((a) => a.name)).toEqual(['a']);
  });

  it('an empty array gets an empty scales array; a member copied whole under the scales\' name is refused', async () => {
    // An .npz with a 0-row array, written by hand (stored members, as NumPy writes them).
    const empty = Buffer.concat([npyHeader([0, 8]), Buffer.alloc(0)]);
    const some = Buffer.concat([npyHeader([2, 8]), Buffer.from(values(16).buffer)]);
    const src = join(dir, 'empty.npz');
    writeFileSync(src, zipSync([['e.npy', empty], ['s.npy', some]]));
    for (const threads of [undefined, 2]) {
      const out = join(dir, `empty-${threads}.npz`);
      await normalizeFile(src, out, { outDtype: 'int8', threads });
      const members = storedMembers(readFileSync(out));
      expect([...members.keys()]).toEqual(['e.npy', 'e_scale.npy', 's.npy', 's_scale.npy']);
      expect(npyOf(members.get('e_scale.npy')!)).toMatchObject({ descr: '<f4', shape: [0] });
      expect(npyOf(members.get('s_scale.npy')!).data.equals(expected(values(16), 'float32', 8, 'int8').scales!)).toBe(true);
    }
    // A member that is not a float array (copied whole) named as s's scales.
    const clash = join(dir, 'clash.npz');
    const ints = Buffer.from('\x93NUMPY\x01\x00v\x00' + "{'descr': '<i4', 'fortran_order': False, 'shape': (), }".padEnd(117, ' ') + '\n', 'latin1');
    writeFileSync(clash, zipSync([['s.npy', some], ['s_scale.npy', Buffer.concat([ints, Buffer.alloc(4)])]]));
    await expect(normalizeFile(clash, join(dir, 'clash-out.npz'), { outDtype: 'int8' })).rejects.toThrow(`${clash}: the scales of array "s" go to the array "s_scale.npy"`);
  });

  it('a safetensors output to a stream with row scales is refused (they come before the data); with a static scale it streams', () => {
    let r = cli(['normalize', join(FIX, 'tensors.safetensors'), '-', '--out-dtype', 'int8']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('rmsnorm-wasm: error: - is a stream, but safetensors puts the rows\' scales before the data: write the output to a file, or give --quant-scale\n');
    expect(r.stdout.length).toBe(0);
    r = cli(['normalize', join(FIX, 'tensors.safetensors'), '-', '--out-dtype', 'float8_e4m3', '--quant-scale', '0.02']);
    expect(r.code, r.stderr).toBe(0);
    const t = tensorsOf(r.stdout).tensors.get('acts')!;
    expect(t.data.equals(expected(values(240), 'float32', 16, 'float8_e4m3', 0.02).q)).toBe(true);
  });
});

describe('a .npy or raw output: its scales in the file beside it', () => {
  const ROWS = 67;
  const DIM = 96;
  const x = testData(ROWS, DIM);
  let input: string;
  beforeAll(() => {
    input = join(dir, 'x.npy');
    writeNpy(input, [ROWS, DIM], x);
  });

  for (const path of PATHS) {
    for (const dtype of ['float32', 'float16', 'bfloat16'] as const) {
      it(`${dtype} to int8, ${path.name}: OUT (|i1) and OUT.scale.npy (<f4, a float per row)${dtype === 'bfloat16' ? ', raw: OUT.scale with the output\'s extension' : ''}`, async () => {
        // bfloat16 has no .npy: raw data, read with format and dtype.
        const raw = dtype === 'bfloat16';
        const src = join(dir, `x-${dtype}${raw ? '.bin' : '.npy'}`);
        const data = dtype === 'float32' ? x : m.float32ToHalf(x, dtype);
        if (raw) writeFileSync(src, Buffer.from(data.buffer));
        else writeFileSync(src, Buffer.concat([npyHeader([ROWS, DIM], dtype === 'float16' ? 'float16' : 'float32'), Buffer.from(data.buffer)]));
        const out = join(dir, `o-${dtype}-${path.threads}${raw ? '.bin' : '.npy'}`);
        const scalesAt = join(dir, `o-${dtype}-${path.threads}.scale${raw ? '.bin' : '.npy'}`);
        const s = await normalizeFile(src, out, { outDtype: 'int8', threads: path.threads, chunkBytes: 1000, ...(raw && { format: 'raw' as const, dtype, dim: DIM }) });
        expect(s.scales).toBe(scalesAt);
        const want = expected(x, dtype, DIM, 'int8');
        if (raw) {
          expect(readFileSync(out).equals(want.q)).toBe(true);
          expect(readFileSync(scalesAt).equals(want.scales!)).toBe(true);
        } else {
          const q = npyOf(readFileSync(out));
          expect([q.descr, q.shape]).toEqual(['|i1', [ROWS, DIM]]);
          expect(q.data.equals(want.q)).toBe(true);
          const sc = readFileSync(scalesAt);
          const h = parseNpyHeader(new Uint8Array(sc), sc.length, scalesAt);
          expect([h.dtype, h.shape]).toEqual(['float32', [ROWS]]);
          expect(sc.subarray(h.dataOffset).equals(want.scales!)).toBe(true);
        }
        // What the files hold means what it says: the zero row has scale 0; dequantized, q · scale is within half a step
        // of the float64 norm of the stored input (plus y's rounding to its half dtype, at most 2^-8 of the row's max).
        const scales = new Float32Array(want.scales!.buffer.slice(want.scales!.byteOffset, want.scales!.byteOffset + 4 * ROWS));
        const q = new Int8Array(want.q.buffer, want.q.byteOffset, ROWS * DIM);
        const stored = dtype === 'float32' ? x : m.halfToFloat32(data as Uint16Array, dtype);
        expect(scales[1]).toBe(0);
        for (let r = 0; r < ROWS; r++) {
          const row = stored.subarray(r * DIM, (r + 1) * DIM);
          if (!row.every(Number.isFinite)) continue; // float16 takes the 1e30 row to infinity
          const rstd = 1 / Math.sqrt(row.reduce((a, v) => a + v * v, 0) / DIM + 1e-6);
          const half = dtype === 'float32' ? 0 : 2 ** -8 * 127 * scales[r]!;
          for (let i = 0; i < DIM; i++) expect(Math.abs(q[r * DIM + i]! * scales[r]! - row[i]! * rstd), `row ${r}`).toBeLessThanOrEqual(0.5 * scales[r]! * (1 + 1e-6) + half);
        }
      });
    }
  }

  it('float64 input, a range, standard input: the same bits as the sync API on the float32 values', async () => {
    const x64 = Float64Array.from(x, (v, i) => v + (i % 3) * 1e-12);
    const src = join(dir, 'x64.npy');
    const head = Buffer.from(npyHeader([ROWS, DIM], 'float64'));
    writeFileSync(src, Buffer.concat([head, Buffer.from(x64.buffer)]));
    const out = join(dir, 'o64.npy');
    let r = cli(['normalize', src, out, '--out-dtype', 'int8', '--threads', '2']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout.toString()).toMatch(new RegExp(`→ ${out} \\(scales: ${join(dir, 'o64.scale.npy')}\\)\\n$`));
    const want = expected(Float32Array.from(x64), 'float32', DIM, 'int8');
    expect(npyOf(readFileSync(out)).data.equals(want.q)).toBe(true);
    expect(npyOf(readFileSync(join(dir, 'o64.scale.npy'))).data.equals(want.scales!)).toBe(true);
    // Standard input (read as a stream, normalized on the pool front to back).
    const piped = join(dir, 'piped.npy');
    r = cli(['normalize', '-', piped, '--out-dtype', 'int8'], { input: readFileSync(src) });
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(piped).equals(readFileSync(out))).toBe(true);
    expect(readFileSync(join(dir, 'piped.scale.npy')).equals(readFileSync(join(dir, 'o64.scale.npy')))).toBe(true);
    // A range: those rows' codes and scales.
    const part = join(dir, 'part.npy');
    await normalizeFile(src, part, { outDtype: 'int8', range: [2, 7] });
    const q = npyOf(readFileSync(part));
    expect(q.shape).toEqual([5, DIM]);
    expect(q.data.equals(want.q.subarray(2 * DIM, 7 * DIM))).toBe(true);
    expect(npyOf(readFileSync(join(dir, 'part.scale.npy'))).data.equals(want.scales!.subarray(8, 28))).toBe(true);
  });

  it('refusals, each before anything is written: float8 in a .npy, a stream output, rstd where the scales go, bad options', async () => {
    const out = join(dir, 'kept.npy');
    writeFileSync(out, 'previous');
    await expect(normalizeFile(input, out, { outDtype: 'float8_e4m3' })).rejects.toThrow(
      new NormalizeError(`${out}: NumPy has no float8_e4m3 dtype, so a .npy cannot hold it (write float32, float16 or int8, or a raw or safetensors file)`),
    );
    await expect(normalizeFile(input, '-', { outDtype: 'int8' })).rejects.toThrow(
      new NormalizeError(`the rows' scales of a quantized output go to a file beside it, but the output - is a stream: write it to a file, or give options.quantScale`),
    );
    await expect(normalizeFile(input, out, { outDtype: 'int8', rstd: join(dir, 'kept.scale.npy') })).rejects.toThrow(
      new NormalizeError(`options.rstd ${join(dir, 'kept.scale.npy')} is where the rows' scales of the output go: give another path`),
    );
    // The same file by another name.
    mkdirSync(join(dir, 'sub'), { recursive: true });
    await expect(normalizeFile(input, out, { outDtype: 'int8', rstd: `${dir}/sub/../kept.scale.npy` })).rejects.toThrow(/options\.rstd .* is where the rows' scales of the output go/);
    await expect(normalizeFile(input, out, { outDtype: 'int4' as 'int8' })).rejects.toThrow(
      new TypeError(`normalizeFile: options.outDtype must be 'float32', 'float16', 'bfloat16', 'int8' or 'float8_e4m3', got string "int4"`),
    );
    await expect(normalizeFile(input, out, { quantScale: 0.5 })).rejects.toThrow(TypeError);
    await expect(normalizeFile(input, out, { quantScale: 0.5 })).rejects.toThrow(/options\.quantScale was given without options\.outDtype/);
    await expect(normalizeFile(input, out, { outDtype: 'int8', quantScale: 0 })).rejects.toThrow(RangeError);
    await expect(normalizeFile(input, out, { outDtype: 'int8', quantScale: 0 })).rejects.toThrow(/normalizeFile: options\.quantScale must be > 0/);
    // The scales file may not be the input.
    const self = join(dir, 'self.npy');
    writeNpy(join(dir, 'self.scale.npy'), [ROWS, DIM], x);
    await expect(normalizeFile(join(dir, 'self.scale.npy'), self, { outDtype: 'int8' })).rejects.toThrow(
      new NormalizeError(`the rows' scales of ${self} go to ${join(dir, 'self.scale.npy')}, which is the input: write the output elsewhere`),
    );
    expect(readFileSync(out, 'utf8')).toBe('previous');
    expect(existsSync(join(dir, 'kept.scale.npy'))).toBe(false);
    expect(existsSync(self)).toBe(false);
    expect(readdirSync(dir).filter((n) => n.includes('.tmp-'))).toEqual([]);
    const r = cli(['normalize', input, out, '--out-dtype', 'int8', '--quant-scale', 'half']);
    expect([r.code, r.stderr]).toEqual([2, 'rmsnorm-wasm: --quant-scale must be a number, got "half" (see rmsnorm-wasm --help)\n']);
  });
});

describe('the pair of a .npy and its scales, killed at each system call that publishes it (strace injects SIGKILL there)', () => {
  const ROWS = 40;
  const DIM = 64;
  let input: string;
  let oldPair: [Buffer, Buffer];
  let newPair: [Buffer, Buffer];
  let wA: string;
  let wB: string;
  beforeAll(async () => {
    input = join(dir, 'pair-in.npy');
    writeNpy(input, [ROWS, DIM], testData(ROWS, DIM));
    wA = join(dir, 'wA.npy');
    wB = join(dir, 'wB.npy');
    writeNpy(wA, [DIM], new Float32Array(DIM).fill(1));
    writeNpy(wB, [DIM], new Float32Array(DIM).map((_, i) => 0.25 + i / 16));
    const p = join(dir, 'pair-ref');
    mkdirSync(p);
    await normalizeFile(input, join(p, 'a.npy'), { outDtype: 'int8', weight: wA });
    await normalizeFile(input, join(p, 'b.npy'), { outDtype: 'int8', weight: wB });
    oldPair = [readFileSync(join(p, 'a.npy')), readFileSync(join(p, 'a.scale.npy'))];
    newPair = [readFileSync(join(p, 'b.npy')), readFileSync(join(p, 'b.scale.npy'))];
    expect(oldPair[1].equals(newPair[1])).toBe(false);
  });

  // One libuv thread does every asynchronous file call, so strace's count of a system call is the process's.
  const cases = [
    { at: 'the removal of the output it replaces', inject: 'unlink,unlinkat:signal=KILL:when=1', out: 'old', scales: 'old' },
    { at: 'the rename of the scales', inject: 'rename,renameat,renameat2:signal=KILL:when=1', out: 'none', scales: 'old' },
    { at: 'the rename of the output', inject: 'rename,renameat,renameat2:signal=KILL:when=2', out: 'none', scales: 'new' },
  ] as const;
  for (const c of cases) {
    it(`killed at ${c.at}: ${c.out === 'old' ? 'the previous pair' : 'no output'}; the next run writes the new pair and removes the temporaries`, () => {
      const work = join(dir, `kill-${c.inject.split(',')[0]}-${c.inject.at(-1)}`);
      mkdirSync(work);
      const out = join(work, 'out.npy');
      writeFileSync(out, oldPair[0]);
      writeFileSync(join(work, 'out.scale.npy'), oldPair[1]);
      const r = cli(['normalize', input, out, '--out-dtype', 'int8', '--weight', wB], {
        env: { UV_THREADPOOL_SIZE: '1' },
        strace: ['-f', '-qq', '-o', '/dev/null', '-e', 'trace=unlink,unlinkat,rename,renameat,renameat2', '-e', `inject=${c.inject}`],
      });
      expect(r.signal, r.stderr).toBe('SIGKILL'); // strace ends as its tracee did
      if (c.out === 'old') expect(readFileSync(out).equals(oldPair[0])).toBe(true);
      else expect(existsSync(out)).toBe(false);
      expect(readFileSync(join(work, 'out.scale.npy')).equals(c.scales === 'old' ? oldPair[1] : newPair[1])).toBe(true);
      expect(readdirSync(work).some((n) => n.includes('.tmp-'))).toBe(true);
      // Whatever was killed, the next run makes the new pair, and leaves no temporary.
      const again = cli(['normalize', input, out, '--out-dtype', 'int8', '--weight', wB]);
      expect(again.code, again.stderr).toBe(0);
      expect(readFileSync(out).equals(newPair[0])).toBe(true);
      expect(readFileSync(join(work, 'out.scale.npy')).equals(newPair[1])).toBe(true);
      expect(readdirSync(work).sort()).toEqual(['out.npy', 'out.scale.npy']);
    });
  }

  it('in place: the input is not removed before the new output replaces it', () => {
    const work = join(dir, 'in-place');
    mkdirSync(work);
    const out = join(work, 'x.npy');
    writeFileSync(out, readFileSync(input));
    const r = cli(['normalize', out, out, '--in-place', '--out-dtype', 'int8', '--weight', wB], {
      env: { UV_THREADPOOL_SIZE: '1' },
      strace: ['-f', '-qq', '-o', '/dev/null', '-e', 'trace=unlink,unlinkat,rename,renameat,renameat2', '-e', 'inject=rename,renameat,renameat2:signal=KILL:when=2'],
    });
    expect(r.signal).toBe('SIGKILL');
    expect(readFileSync(out).equals(readFileSync(input)), 'the input, still there').toBe(true);
    expect(cli(['normalize', out, out, '--in-place', '--out-dtype', 'int8', '--weight', wB]).code).toBe(0);
    expect(readFileSync(out).equals(newPair[0])).toBe(true);
    expect(readFileSync(join(work, 'x.scale.npy')).equals(newPair[1])).toBe(true);
  });

  it('an aborted call (an error before the renames) leaves the previous pair as it was', async () => {
    const work = join(dir, 'aborted');
    mkdirSync(work);
    const out = join(work, 'out.npy');
    writeFileSync(out, oldPair[0]);
    writeFileSync(join(work, 'out.scale.npy'), oldPair[1]);
    const ac = new AbortController();
    const p = normalizeFile(input, out, { outDtype: 'int8', weight: wB, chunkBytes: 256, onProgress: () => ac.abort(new Error('stop')), signal: ac.signal });
    await expect(p).rejects.toThrow('stop');
    expect(readFileSync(out).equals(oldPair[0])).toBe(true);
    expect(readFileSync(join(work, 'out.scale.npy')).equals(oldPair[1])).toBe(true);
    expect(readdirSync(work).sort()).toEqual(['out.npy', 'out.scale.npy']);
  });
});

describe('a dataset of quantized outputs', () => {
  const DIM = 32;
  let inDir: string;
  beforeAll(() => {
    inDir = join(dir, 'ds-in');
    mkdirSync(inDir);
    for (let i = 0; i < 3; i++) writeNpy(join(inDir, `f${i}.npy`), [50 + i, DIM], testData(50 + i, DIM).map((v) => v * (i + 1)));
    mkdirSync(join(inDir, 'sub'));
    writeFileSync(join(inDir, 'sub', 'c.npz'), readFileSync(join(FIX, 'savez.npz')));
  });

  it('records the pair as one output (its scales in the record), skips it on a rerun, redoes it when either file changed or is gone', async () => {
    const out = join(dir, 'ds-out');
    const seen: DatasetRecord[] = [];
    const s = await normalizeDataset(inDir, out, { outDtype: 'int8', onFile: (e) => e.status === 'written' && seen.push(e.record) });
    expect(s.written).toBe(4);
    expect(readdirSync(out).sort()).toEqual(['f0.npy', 'f0.scale.npy', 'f1.npy', 'f1.scale.npy', 'f2.npy', 'f2.scale.npy', 'manifest.jsonl', 'sub']);
    const lines = readFileSync(join(out, 'manifest.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as DatasetRecord);
    expect(lines).toHaveLength(4);
    for (const i of [0, 1, 2]) {
      const r = lines.find((l) => l.output === `f${i}.npy`)!;
      const st = statSync(join(out, `f${i}.scale.npy`));
      expect(r.scales).toEqual({ output: `f${i}.scale.npy`, outputSize: st.size, outputMtimeMs: st.mtimeMs });
      expect(r.outDtype).toBe('int8');
      expect(r.options).toMatchObject({ outDtype: 'int8' });
      // A run without quantScale records no such key: the records of runs made before it existed still match.
      expect(Object.keys(r.options)).not.toContain('quantScale');
      // The same bytes as one file's call.
      await normalizeFile(join(inDir, `f${i}.npy`), join(dir, 'one.npy'), { outDtype: 'int8' });
      expect(readFileSync(join(out, `f${i}.npy`)).equals(readFileSync(join(dir, 'one.npy')))).toBe(true);
      expect(readFileSync(join(out, `f${i}.scale.npy`)).equals(readFileSync(join(dir, 'one.scale.npy')))).toBe(true);
    }
    expect(lines.find((l) => l.output === 'sub/c.npz')!.scales).toBeUndefined();
    expect((await normalizeDataset(inDir, out, { outDtype: 'int8' })).skipped).toBe(4);
    // A scales file touched (another time) or removed: that output is redone, the others skipped.
    utimesSync(join(out, 'f1.scale.npy'), new Date(), new Date(Date.now() - 5000));
    rmSync(join(out, 'f2.scale.npy'));
    const again = await normalizeDataset(inDir, out, { outDtype: 'int8' });
    expect([again.written, again.skipped]).toEqual([2, 2]);
    expect(existsSync(join(out, 'f2.scale.npy'))).toBe(true);
    // A static scale is another setting: every output redone, and the scales files the records vouched for removed.
    expect((await normalizeDataset(inDir, out, { outDtype: 'int8', quantScale: 0.05 })).written).toBe(4);
    expect(readdirSync(out).filter((n) => n.includes('.scale'))).toEqual([]);
    // A scales file that is not the recorded one (the user's) is left alone.
    expect((await normalizeDataset(inDir, out, { outDtype: 'int8', force: true })).written).toBe(4);
    writeFileSync(join(out, 'f0.scale.npy'), 'mine');
    await normalizeDataset(inDir, out, { outDtype: 'float16' });
    expect(readFileSync(join(out, 'f0.scale.npy'), 'utf8')).toBe('mine');
    expect(existsSync(join(out, 'f1.scale.npy'))).toBe(false);
  });

  it('split between shards: each part has its scales, together the whole file\'s; another shard count removes the stale parts\' scales', async () => {
    const big = join(dir, 'ds-big');
    mkdirSync(big);
    writeNpy(join(big, 'x.npy'), [64, 256], testData(64, 256));
    await normalizeFile(join(big, 'x.npy'), join(dir, 'whole.npy'), { outDtype: 'int8' });
    const out = join(dir, 'ds-big-out');
    const run = (count: number) => Promise.all(Array.from({ length: count }, (_, index) => normalizeDataset(big, out, { outDtype: 'int8', shard: { index, count }, splitBytes: 1000 })));
    await run(2);
    const names = (count: number) => Array.from({ length: count }, (_, k) => [`x.part-${k}-of-${count}.npy`, `x.part-${k}-of-${count}.scale.npy`]).flat();
    expect(readdirSync(out).filter((n) => n.startsWith('x.')).sort()).toEqual(names(2).sort());
    const cat = (suffix: string, count: number) => Buffer.concat(Array.from({ length: count }, (_, k) => npyOf(readFileSync(join(out, `x.part-${k}-of-${count}${suffix}`))).data));
    expect(cat('.npy', 2).equals(npyOf(readFileSync(join(dir, 'whole.npy'))).data)).toBe(true);
    expect(cat('.scale.npy', 2).equals(npyOf(readFileSync(join(dir, 'whole.scale.npy'))).data)).toBe(true);
    await run(3);
    expect(readdirSync(out).filter((n) => n.startsWith('x.')).sort()).toEqual(names(3).sort());
    expect(cat('.scale.npy', 3).equals(npyOf(readFileSync(join(dir, 'whole.scale.npy'))).data)).toBe(true);
  });

  it('refuses inputs where one\'s scales would be written over another\'s output', async () => {
    const d = join(dir, 'ds-clash');
    mkdirSync(d);
    writeNpy(join(d, 'a.npy'), [2, DIM], testData(2, DIM));
    writeNpy(join(d, 'a.scale.npy'), [2, DIM], testData(2, DIM));
    await expect(normalizeDataset(d, join(dir, 'ds-clash-out'), { outDtype: 'int8' })).rejects.toThrow(
      new NormalizeError(`the rows' scales of ${join(d, 'a.npy')} would be written over the output of ${join(d, 'a.scale.npy')}, a.scale.npy: give options.quantScale, or rename one`),
    );
    expect(existsSync(join(dir, 'ds-clash-out'))).toBe(false);
    expect((await normalizeDataset(d, join(dir, 'ds-clash-out'), { outDtype: 'int8', quantScale: 0.1 })).written).toBe(2);
  });
});
