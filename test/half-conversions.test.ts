// The kernels' own half-precision conversions (`halfToFloat32`, `float32ToHalf`: wasm, SIMD128 on
// the simd builds, scalar code on the scalar build) against the exact reference conversions of
// shared/reference.js, which test/half-reference.test.ts checks against NumPy and ml_dtypes.
// Tolerance: none. A conversion has one right answer per input, NaN payloads included (the
// library documents its NaN rule, and the reference follows it), so every comparison is of
// bits: float32 results through a Uint32Array view (a JS number cannot carry a NaN payload).
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadRmsNorm, type RmsNorm } from '../dist/index.js';
import { BUILDS } from '../ts/glue/load.js';
import { f32BitsOf, f32BitsToHalf, halfIsInf, halfIsNaN, halfToF32Bits, rng, type HalfDtype } from '../shared/reference.js';

const DTYPES: HalfDtype[] = ['float16', 'bfloat16'];
/** Lengths that leave 1..3 elements for the kernel's scalar tail after its 4-wide vectors. */
const TAIL_LENGTHS = [1, 3, 5, 7, 4099];
/** The sync API converts through its window in chunks of this many elements (rmsnorm.ts). */
const CHUNK = 21840;

const hex = (v: number, w: number) => '0x' + (v >>> 0).toString(16).padStart(w, '0');

/** float32 bit patterns → a Float32Array holding exactly those bits (NaN payloads included). */
function f32Of(bits: ArrayLike<number>): Float32Array {
  return new Float32Array(Uint32Array.from(bits).buffer);
}
const bitsOf = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);

/** The first `max` differences between two bit arrays, described with the input that made each. */
function diffs(got: ArrayLike<number>, want: ArrayLike<number>, input: ArrayLike<number>, inW: number, outW: number, max = 8): string[] {
  const out: string[] = [];
  if (got.length !== want.length) return [`length ${got.length}, expected ${want.length}`];
  for (let i = 0; i < want.length && out.length < max; i++) {
    if (got[i] !== want[i]) out.push(`[${i}] ${hex(input[i]!, inW)}: got ${hex(got[i]!, outW)}, expected ${hex(want[i]!, outW)}`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Inputs (built once; the expected bits come from the reference, never from the library).
// ---------------------------------------------------------------------------------------------

const ALL_HALF = Uint16Array.from({ length: 65536 }, (_, i) => i);

interface RefFixture {
  cases: { f32Bits: string };
}
const fixture = JSON.parse(readFileSync(new URL('./fixtures/half/ref-fixture.json', import.meta.url), 'utf8')) as RefFixture;
/** The float32 cases NumPy / ml_dtypes were asked about (every boundary class of that fixture). */
const FIXTURE_BITS = (() => {
  const b = Buffer.from(fixture.cases.f32Bits, 'base64');
  const buf = new ArrayBuffer(b.length);
  new Uint8Array(buf).set(b);
  return new Uint32Array(buf);
})();

const INF_PATTERN: Record<HalfDtype, number> = { float16: 0x7c00, bfloat16: 0x7f80 };
/** float32 bits of 2^(emax+1), where the largest finite half's binade ends (bfloat16: float32's Inf). */
const PAST_MAX_BITS: Record<HalfDtype, number> = { float16: f32BitsOf(65536), bfloat16: 0x7f800000 };

/** Hand-picked float32 patterns: overflow, subnormal and zero boundaries, infinities, NaNs. */
function specialBits(dtype: HalfDtype): number[] {
  const common = [
    0x00000000, 0x00000001, 0x007fffff, 0x00800000, 0x00800001, 0x3f800000, 0x3f800001, 0x3f7fffff,
    0x7f7fffff, 0x7f7f7fff, 0x7f7f8000, 0x7f7f8001, 0x7f7fc000, 0x7f000000, 0x7f800000,
    // NaNs: quiet and signalling, payload only in the low 13 / 16 bits (dropped by the narrowing:
    // the result must still be a NaN), payload in the bits that survive, all ones.
    0x7fc00000, 0x7f800001, 0x7f801fff, 0x7f802000, 0x7fa12345, 0x7fbfffff, 0x7fbfe000, 0x7fffffff,
    0x7f80ffff, 0x7f810000, 0x7fc0ffff, 0x7fe00001,
  ];
  const f16 = [
    // 65504 = max; 65519.99 (65520 − 1 float32 ulp) still rounds to it; 65520 is the tie to 2^16: Inf.
    f32BitsOf(65504), f32BitsOf(65504) + 1, f32BitsOf(65519.99), f32BitsOf(65520) - 1, f32BitsOf(65520), f32BitsOf(65520) + 1,
    f32BitsOf(65536), f32BitsOf(1e30), f32BitsOf(2 ** 16 - 2 ** -8),
    // subnormal boundaries: 2^-24 (smallest subnormal), 2^-25 (the tie to 0), 3·2^-25 (tie to 2),
    // 2^-14 (smallest normal), the largest subnormal and the midpoint between them, 2^-26, 2^-40.
    f32BitsOf(2 ** -24), f32BitsOf(2 ** -25), f32BitsOf(2 ** -25) - 1, f32BitsOf(2 ** -25) + 1, f32BitsOf(3 * 2 ** -25),
    f32BitsOf(2 ** -14), f32BitsOf(2 ** -14) - 1, f32BitsOf(2 ** -14 - 2 ** -24), f32BitsOf(2 ** -14 - 2 ** -25),
    f32BitsOf(2 ** -14 - 2 ** -25) - 1, f32BitsOf(2 ** -26), f32BitsOf(2 ** -40),
  ];
  const bf16 = [
    // FLT_MAX is past bfloat16's overflow threshold 0x7f7f8000 (the tie to 2^128).
    0x7f7f7fff, 0x7f7f8000, 0x7f7effff, 0x7f7e8000, 0x7f7f0000,
    // subnormal boundaries: bfloat16's smallest subnormal 2^-133 (0x00010000), its tie to 0
    // (0x00008000), the smallest normal 2^-126 and the largest subnormal 0x007f0000.
    0x00010000, 0x00008000, 0x00008001, 0x00007fff, 0x00018000, 0x00028000, 0x007f0000, 0x007f8000, 0x007fffff, 0x007f7fff,
  ];
  const pos = [...common, ...(dtype === 'float16' ? f16 : bf16)];
  return [...pos, ...pos.map((b) => (b | 0x80000000) >>> 0)];
}

/**
 * float32 inputs for the narrowing, in groups: every half value (the widened form of every
 * pattern, NaNs included), the midpoint between each pair of adjacent values of each sign (the
 * tie, which must go to even) and the float32 on each side of it, the hand-picked specials, the
 * NumPy fixture, and 100k random bit patterns.
 */
function narrowingInputs(dtype: HalfDtype, seed: number): { all: Uint32Array; special: Uint32Array } {
  const out: number[] = [];
  for (let p = 0; p < 65536; p++) out.push(halfToF32Bits(p, dtype));
  for (let p = 0; p < INF_PATTERN[dtype]; p++) {
    // Within a binade float32 bits are linear in the value, and the next binade starts at the
    // next half value, so the midpoint's bits are the mean of the two neighbours' bits — also
    // across binades and from the largest finite value to 2^(emax+1).
    const lo = halfToF32Bits(p, dtype);
    const hi = p + 1 === INF_PATTERN[dtype] ? PAST_MAX_BITS[dtype] : halfToF32Bits(p + 1, dtype);
    const mid = (lo + hi) / 2;
    if (!Number.isInteger(mid)) throw new Error(`midpoint of ${p} not a float32`);
    for (const b of [mid - 1, mid, mid + 1]) out.push(b, (b | 0x80000000) >>> 0);
  }
  const special = specialBits(dtype);
  out.push(...special, ...FIXTURE_BITS);
  const next = rng(seed);
  for (let i = 0; i < 100_000; i++) out.push(Math.floor(next() * 2 ** 32));
  return { all: Uint32Array.from(out), special: Uint32Array.from(special) };
}

const INPUTS = Object.fromEntries(DTYPES.map((d, i) => [d, narrowingInputs(d, 0x5eed + i)])) as Record<HalfDtype, ReturnType<typeof narrowingInputs>>;
const EXPECTED_NARROW = Object.fromEntries(
  DTYPES.map((d) => [d, Uint16Array.from(INPUTS[d].all, (b) => f32BitsToHalf(b, d))]),
) as Record<HalfDtype, Uint16Array>;
const EXPECTED_WIDEN = Object.fromEntries(DTYPES.map((d) => [d, Uint32Array.from(ALL_HALF, (p) => halfToF32Bits(p, d))])) as Record<
  HalfDtype,
  Uint32Array
>;

/**
 * Patterns for the short-length calls, where every call is a few elements and a few thousand
 * calls are the budget: the NaNs, infinities, zeros, the subnormal/normal boundary and the top
 * of the range of each sign, plus every 61st pattern.
 */
function interestingPatterns(dtype: HalfDtype): Uint16Array {
  const set = new Set<number>();
  const inf = INF_PATTERN[dtype];
  const minNormal = dtype === 'float16' ? 0x0400 : 0x0080;
  for (const s of [0, 0x8000]) {
    for (let p = 0; p < 16; p++) set.add(s | p); // zero and the smallest subnormals
    for (let p = minNormal - 8; p < minNormal + 8; p++) set.add(s | p);
    for (let p = inf - 8; p < inf + 24; p++) set.add(s | p); // largest finite, Inf, NaNs
    for (let p = 0x7ff0; p < 0x8000; p++) set.add(s | p);
  }
  for (let p = 0; p < 65536; p += 61) set.add(p);
  return Uint16Array.from(set);
}

/** Index sample for the short-length narrowing calls: specials, a spread of the rest. */
function narrowSample(dtype: HalfDtype): Uint32Array {
  const { all, special } = INPUTS[dtype];
  const out: number[] = [...special];
  for (let i = 0; i < all.length; i += 97) out.push(all[i]!);
  return Uint32Array.from(out);
}

// ---------------------------------------------------------------------------------------------

describe.each(BUILDS)('%s build: half conversions', (build) => {
  let m: RmsNorm;
  beforeAll(async () => {
    m = await loadRmsNorm(build);
    expect(m.build).toBe(build);
  });

  describe('widening: all 65536 patterns of each half type', () => {
    // One call of 65536 elements: three whole 21840-element chunks of the window plus a 16-element
    // last one, so the chunking is exercised too. NaNs must come out with the documented bits
    // (bfloat16 shifted as is; float16 quiet bit set, payload moved up).
    it.each(DTYPES)('%s: bits equal halfToF32Bits exactly', (dtype) => {
      const got = m.halfToFloat32(ALL_HALF, dtype);
      expect(got).toBeInstanceOf(Float32Array);
      expect(diffs(bitsOf(got), EXPECTED_WIDEN[dtype], ALL_HALF, 4, 8)).toEqual([]);
    });

    it.each(DTYPES)('%s: the input is left alone, and a view at an odd offset works', (dtype) => {
      const src = ALL_HALF.slice();
      m.halfToFloat32(src, dtype);
      expect(diffs(src, ALL_HALF, ALL_HALF, 4, 4)).toEqual([]);
      // A Uint16Array 2 bytes into its buffer (not 4-byte aligned).
      const view = src.subarray(1, 1 + 4099);
      const got = m.halfToFloat32(view, dtype);
      expect(diffs(bitsOf(got), EXPECTED_WIDEN[dtype].subarray(1, 1 + 4099), view, 4, 8)).toEqual([]);
    });
  });

  describe('widening: rows of normal numbers and zeros alone (their shorter formula), and one special among them', () => {
    // A row of float16 with no Inf, NaN or subnormal widens by a shorter formula than one that
    // has any (the kernel asks first); every such pattern, in one call, then with one Inf, NaN
    // or subnormal placed in the first, a middle and the last block of eight, and the tail.
    const normal = (p: number) => (p & 0x7fff) === 0 || ((p & 0x7c00) !== 0 && (p & 0x7c00) !== 0x7c00);
    const NORMAL_HALF = ALL_HALF.filter(normal);
    it.each(DTYPES)('%s: bits equal halfToF32Bits exactly', (dtype) => {
      const got = m.halfToFloat32(NORMAL_HALF, dtype);
      expect(diffs(bitsOf(got), Uint32Array.from(NORMAL_HALF, (p) => EXPECTED_WIDEN[dtype][p]!), NORMAL_HALF, 4, 8)).toEqual([]);
    });
    it.each(DTYPES)('%s: one special anywhere in a row', (dtype) => {
      const row = NORMAL_HALF.subarray(1000, 1000 + 4099).slice();
      for (const special of [0x7c00, 0xfe01, 0x0001, 0x83ff]) {
        for (const at of [0, 3, 8, 2047, 4095, 4096, 4098]) {
          const x = row.slice();
          x[at] = special;
          const got = m.halfToFloat32(x, dtype);
          expect(diffs(bitsOf(got), Uint32Array.from(x, (p) => EXPECTED_WIDEN[dtype][p]!), x, 4, 8), `${hex(special, 4)} at ${at}`).toEqual([]);
        }
      }
    });
  });

  describe('widening: lengths that are not a multiple of 4 (the scalar tail)', () => {
    // The same patterns cut into calls of each length: every pattern lands once in some position
    // of the vector body or the tail. 4099 covers all 65536 patterns; the short lengths a few
    // thousand chosen ones (each short call costs a round trip into wasm).
    it.each(DTYPES.flatMap((d) => TAIL_LENGTHS.map((n) => [d, n] as const)))('%s, length %i', (dtype, n) => {
      const src = n >= 1000 ? ALL_HALF : interestingPatterns(dtype);
      const got = new Uint32Array(src.length);
      for (let i = 0; i < src.length; i += n) {
        const part = src.subarray(i, Math.min(i + n, src.length));
        const r = m.halfToFloat32(part, dtype);
        expect(r.length).toBe(part.length);
        got.set(bitsOf(r), i);
      }
      const want = Uint32Array.from(src, (p) => EXPECTED_WIDEN[dtype][p]!);
      expect(diffs(got, want, src, 4, 8)).toEqual([]);
    });
  });

  describe('narrowing: round to nearest even, overflow to Inf, NaNs kept', () => {
    // One call over all inputs (about 400k per dtype: every value, every midpoint ± 1 float32
    // ulp of both signs, the specials, NumPy's fixture cases and 100k random patterns), which
    // also crosses many window chunks.
    it.each(DTYPES)('%s: every input, bits equal f32BitsToHalf exactly', (dtype) => {
      const { all } = INPUTS[dtype];
      const got = m.float32ToHalf(f32Of(all), dtype);
      expect(got).toBeInstanceOf(Uint16Array);
      expect(diffs(got, EXPECTED_NARROW[dtype], all, 8, 4)).toEqual([]);
    });

    it.each(DTYPES)('%s: the hand-picked boundaries, by class', (dtype) => {
      // The same check as above on the special values alone, with the expected classes spelled
      // out so that a wrong reference could not hide a wrong kernel here.
      const { special } = INPUTS[dtype];
      const got = m.float32ToHalf(f32Of(special), dtype);
      for (let i = 0; i < special.length; i++) {
        const b = special[i]!;
        const isNaN32 = (b & 0x7fffffff) > 0x7f800000;
        const g = got[i]!;
        if (isNaN32) {
          expect(halfIsNaN(g, dtype), hex(b, 8)).toBe(true);
          expect(g & 0x8000, hex(b, 8)).toBe(b >>> 31 ? 0x8000 : 0);
        }
        if ((b & 0x7fffffff) === 0x7f800000) expect(halfIsInf(g, dtype)).toBe(true);
        expect(g, `${hex(b, 8)} → ${hex(g, 4)}`).toBe(f32BitsToHalf(b, dtype));
      }
      if (dtype === 'float16') {
        expect(Array.from(m.float32ToHalf(new Float32Array([65504, 65519.99, 65520, -65520, 2 ** -24, 2 ** -25, -(2 ** -25)]), dtype))).toEqual([
          0x7bff, 0x7bff, 0x7c00, 0xfc00, 0x0001, 0x0000, 0x8000,
        ]);
      } else {
        expect(Array.from(m.float32ToHalf(f32Of([0x7f7fffff, 0xff7fffff, 0x7f7f7fff, 0x00008000, 0x00008001]), dtype))).toEqual([
          0x7f80, 0xff80, 0x7f7f, 0x0000, 0x0001,
        ]);
      }
    });

    it.each(DTYPES)('%s: the input is left alone, and a view at an offset works', (dtype) => {
      const { all } = INPUTS[dtype];
      const x = f32Of(all.subarray(0, 70000));
      const before = bitsOf(x).slice();
      m.float32ToHalf(x, dtype);
      expect(diffs(bitsOf(x), before, before, 8, 8)).toEqual([]); // NaN payloads survive too
      const view = x.subarray(3, 3 + 4099);
      expect(diffs(m.float32ToHalf(view, dtype), EXPECTED_NARROW[dtype].subarray(3, 3 + 4099), bitsOf(view), 8, 4)).toEqual([]);
    });
  });

  describe('narrowing: lengths that are not a multiple of 4 (the scalar tail)', () => {
    // Calls of each length over a sample (specials first, then every 97th input); 4099 and one
    // more than a window chunk over every input.
    it.each(DTYPES.flatMap((d) => [...TAIL_LENGTHS, CHUNK + 1].map((n) => [d, n] as const)))('%s, length %i', (dtype, n) => {
      const src = n >= 1000 ? INPUTS[dtype].all : narrowSample(dtype);
      const want = n >= 1000 ? EXPECTED_NARROW[dtype] : Uint16Array.from(src, (b) => f32BitsToHalf(b, dtype));
      const x = f32Of(src);
      const got = new Uint16Array(src.length);
      for (let i = 0; i < src.length; i += n) {
        const part = x.subarray(i, Math.min(i + n, src.length));
        const r = m.float32ToHalf(part, dtype);
        expect(r.length).toBe(part.length);
        got.set(r, i);
      }
      expect(diffs(got, want, src, 8, 4)).toEqual([]);
    });
  });

  describe('eight-lane groups: one Inf or NaN among ordinary values, at each position', () => {
    // The SIMD builds convert eight elements at a time and send a group holding an Inf/NaN
    // half (widening) or a NaN float32 (narrowing) to a four-lane path; every other group takes
    // a path without those cases. Each special here sits at each of the 8 positions of a group
    // of ordinary values (the call starts at a group boundary), so both paths and the switch
    // between them meet every lane.
    const groups = (specials: number[], ordinary: () => number) => {
      const out: number[] = [];
      for (const sp of specials) for (let pos = 0; pos < 8; pos++) for (let j = 0; j < 8; j++) out.push(j === pos ? sp : ordinary());
      return out;
    };
    it.each(DTYPES)('%s: widening', (dtype) => {
      const inf = INF_PATTERN[dtype];
      const next = rng(11);
      const finite = () => {
        const p = Math.floor(next() * inf); // any finite pattern: zeros, subnormals, normals
        return next() < 0.5 ? p : p | 0x8000;
      };
      const src = Uint16Array.from(groups([inf, inf | 0x8000, inf + 1, inf + 0x41, 0x7fff, 0xffff, inf | 0x8001], finite));
      const want = Uint32Array.from(src, (p) => EXPECTED_WIDEN[dtype][p]!);
      expect(diffs(bitsOf(m.halfToFloat32(src, dtype)), want, src, 4, 8)).toEqual([]);
    });
    it.each(DTYPES)('%s: narrowing', (dtype) => {
      const next = rng(12);
      const { all } = INPUTS[dtype];
      const notNaN = () => {
        for (;;) {
          const b = all[Math.floor(next() * all.length)]!;
          if ((b & 0x7fffffff) <= 0x7f800000) return b; // Inf and overflow too: they take the fast path
        }
      };
      const src = Uint32Array.from(groups([0x7fc00000, 0xffc00000, 0x7f800001, 0x7fffffff, 0xff80ffff, 0x7fa12345], notNaN));
      const want = Uint16Array.from(src, (b) => f32BitsToHalf(b, dtype));
      expect(diffs(m.float32ToHalf(f32Of(src), dtype), want, src, 8, 4)).toEqual([]);
    });
  });

  describe('empty arrays', () => {
    it.each(DTYPES)('%s: length 0 both ways', (dtype) => {
      expect(m.halfToFloat32(new Uint16Array(0), dtype)).toEqual(new Float32Array(0));
      expect(m.float32ToHalf(new Float32Array(0), dtype)).toEqual(new Uint16Array(0));
    });
  });

  describe('argument errors: TypeError naming the function', () => {
    // Any array type other than the one each direction reads, and any dtype other than the two
    // half types (float32 included: there is nothing to convert).
    const badArrays: [string, unknown][] = [
      ['Float32Array', new Float32Array(4)],
      ['Float64Array', new Float64Array(4)],
      ['Int16Array', new Int16Array(4)],
      ['Uint32Array', new Uint32Array(4)],
      ['Uint8Array', new Uint8Array(8)],
      ['number[]', [1, 2, 3]],
      ['null', null],
      ['undefined', undefined],
      ['string', 'abcd'],
    ];
    const badDtypes: unknown[] = ['float32', 'fp16', 'Float16', 'bf16', undefined, null, 1, {}];

    it('halfToFloat32: wrong array type', () => {
      for (const [name, a] of badArrays) {
        expect(() => m.halfToFloat32(a as Uint16Array, 'float16'), name).toThrow(TypeError);
        expect(() => m.halfToFloat32(a as Uint16Array, 'float16'), name).toThrow(/halfToFloat32/);
      }
    });

    it('float32ToHalf: wrong array type', () => {
      const bad: [string, unknown][] = [...badArrays.filter(([n]) => n !== 'Float32Array'), ['Uint16Array', new Uint16Array(4)]];
      for (const [name, a] of bad) {
        expect(() => m.float32ToHalf(a as Float32Array, 'bfloat16'), name).toThrow(TypeError);
        expect(() => m.float32ToHalf(a as Float32Array, 'bfloat16'), name).toThrow(/float32ToHalf/);
      }
    });

    it('both: wrong dtype', () => {
      for (const d of badDtypes) {
        expect(() => m.halfToFloat32(new Uint16Array(4), d as HalfDtype), String(d)).toThrow(TypeError);
        expect(() => m.halfToFloat32(new Uint16Array(4), d as HalfDtype), String(d)).toThrow(/halfToFloat32/);
        expect(() => m.float32ToHalf(new Float32Array(4), d as HalfDtype), String(d)).toThrow(TypeError);
        expect(() => m.float32ToHalf(new Float32Array(4), d as HalfDtype), String(d)).toThrow(/float32ToHalf/);
      }
    });

    it('a failed call leaves the instance working', () => {
      expect(() => m.float32ToHalf(new Float64Array(4) as unknown as Float32Array, 'float16')).toThrow(TypeError);
      expect(Array.from(m.float32ToHalf(new Float32Array([1, -2]), 'float16'))).toEqual([0x3c00, 0xc000]);
      expect(Array.from(m.halfToFloat32(Uint16Array.of(0x3f80, 0xc000), 'bfloat16'))).toEqual([1, -2]);
    });
  });
});
