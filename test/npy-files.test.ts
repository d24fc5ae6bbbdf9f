/**
 * The .npy reader on files NumPy itself wrote (test/fixtures/npy, scripts/make-npy-fixtures.py:
 * versions 1.0, 2.0 and 3.0, float32 and float16; and the layouts it must refuse), and the
 * writer read back.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { halfToFloat32, init } from '../dist/index.js';
import { NpyError, NPY_ITEM_BYTES, npyDataOffset, npyHeader, parseNpyHeader } from '../dist/node/index.js';

const dir = new URL('./fixtures/npy/', import.meta.url);
const file = (name: string) => new Uint8Array(readFileSync(new URL(name, dir)));
/** The fixtures' values: x[i] = ((i·37) mod 101 − 50) / 16, exact in float32. */
const value = (i: number) => (((i * 37) % 101) - 50) / 16;

beforeAll(() => init());

describe('reads what NumPy writes', () => {
  it.each([
    ['v1.npy', [1, 0], [3, 5, 16]],
    ['v2.npy', [2, 0], [4, 24]],
    ['v3.npy', [3, 0], [2, 7]],
    ['one-row.npy', [1, 0], [33]],
  ])('%s: version %j, shape %j, the data where the header says', (name, version, shape) => {
    const b = file(name);
    const h = parseNpyHeader(b, b.length, name);
    expect(h.version).toEqual(version);
    expect(h.shape).toEqual(shape);
    expect(h.dtype).toBe('float32');
    expect(h.dataOffset % 64).toBe(0);
    const data = new Float32Array(b.slice(h.dataOffset).buffer);
    expect(data.length).toBe((shape as number[]).reduce((a, c) => a * c, 1));
    for (let i = 0; i < data.length; i++) expect(data[i]).toBe(value(i));
  });

  it.each([
    ['f16-3d.npy', [3, 5, 8]],
    ['float16.npy', [2, 8]],
    ['weight-f16.npy', [8]],
  ])('%s: float16 ("<f2"), shape %j, the data where the header says', (name, shape) => {
    const b = file(name);
    const h = parseNpyHeader(b, b.length, name);
    expect(h.dtype).toBe('float16');
    expect(h.shape).toEqual(shape);
    expect(h.dataOffset % 64).toBe(0);
    expect(b.length - h.dataOffset).toBe(NPY_ITEM_BYTES.float16 * (shape as number[]).reduce((a, c) => a * c, 1));
    const data = halfToFloat32(new Uint16Array(b.slice(h.dataOffset).buffer), 'float16');
    const want = (i: number) => (name === 'weight-f16.npy' ? 1 + value(i) / 8 : value(i));
    for (let i = 0; i < data.length; i++) expect(data[i]).toBe(want(i));
  });

  it('float64.npy ("<f8", NumPy\'s default dtype): shape and data where the header says', () => {
    const b = file('float64.npy');
    const h = parseNpyHeader(b, b.length, 'float64.npy');
    expect(h).toMatchObject({ dtype: 'float64', shape: [2, 8] });
    expect(NPY_ITEM_BYTES.float64).toBe(8);
    const data = new Float64Array(b.slice(h.dataOffset).buffer);
    for (let i = 0; i < data.length; i++) expect(data[i]).toBe(value(i));
  });

  /** `float16.npy` with its descr '<f2' replaced by `descr` (3 characters). */
  const withDescr = (descr: string) => {
    const b = file('float16.npy');
    const at = Buffer.from(b).indexOf("'<f2'") + 1;
    b.set(new TextEncoder().encode(descr), at);
    return b;
  };

  it.each([
    ['fortran.npy', /Fortran-order arrays are not supported/],
    ['big-endian.npy', /unsupported dtype ">f4" \(big-endian float32/],
    ['big-endian-f16.npy', /unsupported dtype ">f2" \(big-endian float16, byte order ">": only little-endian/],
    ['bfloat16 (ml_dtypes saves it as "<V2")', /unsupported dtype "<V2" \(a 2-byte void type, as ml_dtypes bfloat16 is saved: .* give dtype bfloat16\)/],
    ['"|f2" (no byte order)', /unsupported dtype "\|f2": only little-endian float32 \("<f4"\), float16 \("<f2"\) or float64 \("<f8"\) are supported/],
  ])('refuses %s with a message naming the problem', (name, msg) => {
    const b = name.startsWith('bfloat16') ? withDescr('<V2') : name.startsWith('"|f2"') ? withDescr('|f2') : file(name);
    const e = (() => {
      try {
        parseNpyHeader(b, b.length, name);
      } catch (err) {
        return err as Error;
      }
      throw new Error('accepted');
    })();
    expect(e).toBeInstanceOf(NpyError);
    expect(e.message).toMatch(msg);
    expect(e.message.startsWith(`${name}: `)).toBe(true);
  });

  it('refuses truncated and malformed files', () => {
    const b = file('v1.npy');
    const off = npyDataOffset(b, 'v1.npy');
    expect(() => parseNpyHeader(b.subarray(0, off - 10), off - 10, 'f')).toThrow(/truncated \.npy header/);
    expect(() => parseNpyHeader(b.subarray(0, b.length - 4), b.length - 4, 'f')).toThrow(/truncated\)$/);
    const extra = new Uint8Array(b.length + 4);
    extra.set(b);
    expect(() => parseNpyHeader(extra, extra.length, 'f')).toThrow(/extra bytes at the end/);
    expect(() => parseNpyHeader(new TextEncoder().encode('PK\x03\x04 not npy at all'), 20, 'f')).toThrow(/not a NumPy \.npy file/);
    const bad = b.slice();
    bad.set(new TextEncoder().encode("{'descr': '<f4', 'shape': (3, 5, 16)}"), 10);
    expect(() => parseNpyHeader(bad, bad.length, 'f')).toThrow(/malformed \.npy header/);
    const v9 = b.slice();
    v9[6] = 9;
    expect(() => parseNpyHeader(v9, v9.length, 'f')).toThrow(/version 9\.0 is not supported/);
  });
});

describe('writes what it reads (and NumPy reads: checked by hand with numpy 2.4.6 np.load)', () => {
  it.each([[[3, 5, 16]], [[7]], [[1, 1]], [[100000, 4096]]])('shape %j', (shape) => {
    const h = npyHeader(shape);
    expect(h.length % 64).toBe(0);
    expect(h[h.length - 1]).toBe(0x0a);
    const n = shape.reduce((a, c) => a * c, 1);
    const parsed = parseNpyHeader(h, h.length + 4 * n, 'w');
    expect(parsed.shape).toEqual(shape);
    expect(parsed.version).toEqual([1, 0]);
    expect(parsed.dataOffset).toBe(h.length);
    expect(parsed.dtype).toBe('float32');
    const h16 = npyHeader(shape, 'float16');
    const p16 = parseNpyHeader(h16, h16.length + 2 * n, 'w');
    expect(p16).toMatchObject({ dtype: 'float16', shape, version: [1, 0], dataOffset: h16.length });
    expect(() => parseNpyHeader(h16, h16.length + 4 * n, 'w')).toThrow(/of float16, \d+ bytes of data, but the file has \d+ \(extra bytes at the end\)/);
  });

  it.each([
    ['v1.npy', [3, 5, 16], 'float32'],
    ['one-row.npy', [33], 'float32'],
    ['f16-3d.npy', [3, 5, 8], 'float16'],
    ['weight-f16.npy', [8], 'float16'],
  ] as const)('the header of %s is byte for byte the one NumPy wrote', (name, shape, dtype) => {
    const b = file(name);
    const h = npyHeader(shape, dtype);
    expect(b.subarray(0, h.length)).toEqual(h);
    expect(new TextDecoder('latin1').decode(h)).toContain(`'descr': '${dtype === 'float16' ? '<f2' : '<f4'}'`);
  });

  it('refuses a dtype it cannot write', () => {
    expect(() => npyHeader([2], 'bfloat16' as 'float16')).toThrow(/npyHeader: dtype must be 'float32', 'float16' or 'float64', got "bfloat16"/);
  });

  it('shapes up to NumPy\'s 64 axes; more is a RangeError', () => {
    const shape = Array.from({ length: 64 }, () => 1);
    const h = npyHeader(shape);
    expect(parseNpyHeader(h, h.length + 4, 'w').shape).toEqual(shape);
    expect(() => npyHeader([...shape, 1])).toThrow(/npyHeader: shape must have at most 64 axes, got 65/);
  });
});

/**
 * test/fixtures/npy/header-cases.json (scripts/make-npy-header-cases.py): headers, ordinary
 * and adversarial, each with what NumPy's np.load made of it. The parser refuses everything
 * NumPy refuses, reads what it accepts with NumPy's dtype and shape, and is stricter only
 * where a case says so (a repeated key, which NumPy reads with its last value; spellings no
 * NumPy writer produces). A refusal is one line with the header's bytes escaped.
 */
describe('headers as NumPy reads them, or refused', () => {
  interface Case {
    name: string;
    hex: string;
    numpy: { loads: boolean; dtype?: string; shape?: number[]; fortran?: boolean; error?: string };
    ours: 'accept' | 'refuse';
    why?: string;
  }
  const { cases } = JSON.parse(readFileSync(new URL('./fixtures/npy/header-cases.json', import.meta.url), 'utf8')) as { cases: Case[] };

  it('covers repeated keys, junk, versions and escapes', () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
    for (const c of cases) if (!c.numpy.loads) expect(c.ours, `${c.name}: NumPy refuses it`).toBe('refuse');
    expect(cases.filter((c) => c.numpy.loads && c.ours === 'refuse').every((c) => c.why), 'each stricter case says why').toBe(true);
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const b = new Uint8Array(Buffer.from(c.hex, 'hex'));
    if (c.ours === 'accept') {
      const h = parseNpyHeader(b, b.length, 'f.npy');
      expect(h.dtype).toBe(c.numpy.dtype === '<f2' ? 'float16' : 'float32');
      expect(h.shape).toEqual(c.numpy.shape);
      expect(c.numpy.fortran).toBe(false);
      return;
    }
    let message = '';
    try {
      parseNpyHeader(b, b.length, 'f.npy');
    } catch (err) {
      expect(err).toBeInstanceOf(NpyError);
      message = (err as Error).message;
    }
    expect(message, 'refused').not.toBe('');
    expect(message.startsWith('f.npy: ')).toBe(true);
    expect(message, 'printable ASCII only, on one line').toMatch(/^[\x20-\x7e…]*$/);
  });

  it('names the repeated key', () => {
    const c = cases.find((k) => k.name.startsWith('fortran_order twice'))!;
    const b = new Uint8Array(Buffer.from(c.hex, 'hex'));
    expect(() => parseNpyHeader(b, b.length, 'f.npy')).toThrow(/the key "fortran_order" appears twice/);
  });
});
