/**
 * The .npy reader on files NumPy itself wrote (test/fixtures/npy, scripts/make-npy-fixtures.py:
 * versions 1.0, 2.0 and 3.0; and the layouts it must refuse), and the writer read back.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NpyError, npyDataOffset, npyHeader, parseNpyHeader } from '../dist/node/index.js';

const dir = new URL('./fixtures/npy/', import.meta.url);
const file = (name: string) => new Uint8Array(readFileSync(new URL(name, dir)));
/** The fixtures' values: x[i] = ((i·37) mod 101 − 50) / 16, exact in float32. */
const value = (i: number) => (((i * 37) % 101) - 50) / 16;

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
    ['fortran.npy', /Fortran-order arrays are not supported/],
    ['big-endian.npy', /unsupported dtype ">f4" \(big-endian float32/],
    ['float16.npy', /unsupported dtype "<f2" \(float16/],
    ['float64.npy', /unsupported dtype "<f8" \(float64/],
  ])('refuses %s with a message naming the problem', (name, msg) => {
    const b = file(name);
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
    expect(e.message).toMatch(new RegExp(`^${name}: `));
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
  });

  it('a header too long for version 1.0 is written as 2.0', () => {
    const shape = Array.from({ length: 25000 }, () => 1);
    const h = npyHeader(shape);
    const parsed = parseNpyHeader(h, h.length + 4, 'w');
    expect(parsed.version).toEqual([2, 0]);
    expect(parsed.shape.length).toBe(25000);
  });
});
