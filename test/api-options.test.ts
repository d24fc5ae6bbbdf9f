// Arguments of init() and allocF32() that used to be accepted silently: a string or number
// instead of init's options object, unknown keys, a Map, a non-number length. Each is a
// TypeError naming the function, the argument and what it got, and the module keeps working.
import { beforeAll, describe, expect, it } from 'vitest';
import * as pkg from '../dist/index.js';
import { rejection, thrown } from './thrown.js';

beforeAll(async () => {
  await pkg.init({ build: 'simd' });
});



describe('init(options)', () => {
  it.each([
    ['a string', 'simd', /init: options must be an object, got string "simd"/],
    ['a number', 42, /init: options must be an object, got number 42/],
    ['an unknown key', { extra: 1 }, /init: unknown option "extra" \(known: build\)/],
    ['a typo', { biuld: 'simd' }, /init: unknown option "biuld"/],
    ['a Map', new Map([['build', 'simd']]), /init: options must be a plain object .*Map/],
  ])('rejects %s with a TypeError and keeps the loaded instance', async (_what, options, message) => {
    const before = pkg.instance();
    const e = await rejection(pkg.init(options as never));
    expect(e).toBeInstanceOf(TypeError);
    expect(e.message).toMatch(message);
    expect(pkg.instance()).toBe(before);
    const y = pkg.rmsNorm(new Float32Array([3, 4]), null, { dim: 2 });
    expect(Array.from(y)).toEqual(Array.from(new Float32Array([3, 4].map((v) => v / Math.sqrt(12.5 + 1e-6)))));
  });
});

describe('allocF32(length)', () => {
  it.each([
    ['a string', '4', 'string "4"'],
    ['null', null, 'null'],
    ['a bigint', 4n, 'bigint 4'],
    ['undefined', undefined, 'undefined'],
  ])('rejects %s with a TypeError naming the type', (_what, length, got) => {
    const e = thrown(() => pkg.allocF32(length as never));
    expect(e).toBeInstanceOf(TypeError);
    expect(e.message).toBe(`allocF32: length must be a number (a count of floats), got ${got}`);
  });

  it.each([-1, 1.5, NaN, Infinity, 2 ** 30])('rejects %s with a RangeError', (length) => {
    const e = thrown(() => pkg.allocF32(length));
    expect(e).toBeInstanceOf(RangeError);
    expect(e.message).toContain(`got ${length}`);
  });
});
