/**
 * The half-precision reference conversions (shared/reference.js) against implementations they
 * share no code with: NumPy's float16 casts and ml_dtypes' bfloat16, recorded by
 * scripts/make-half-ref-fixture.py in test/fixtures/half/ref-fixture.json. The kernels' own
 * conversions are tested against this reference, so it must be right on every pattern that
 * can be enumerated and on every rounding boundary that cannot.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  bf16ToF32,
  f16ToF32,
  f32BitsOf,
  f32BitsToHalf,
  f32FromBits,
  f32ToBf16,
  f32ToF16,
  f32ToHalf,
  fromF32Array,
  halfIsInf,
  halfIsNaN,
  halfToF32,
  halfToF32Bits,
  halfUlp,
  halfUlpDiff,
  toF32Array,
  type HalfDtype,
} from '../shared/reference.js';

interface Fixture {
  toF32Sha256: Record<HalfDtype, string>;
  cases: { count: number; classNames: string[]; f32Bits: string; class: string; float16: string; bfloat16: string };
}
const fixture = JSON.parse(readFileSync(new URL('./fixtures/half/ref-fixture.json', import.meta.url), 'utf8')) as Fixture;

/** base64 → bytes in a fresh ArrayBuffer (a Buffer's may sit at an offset no Uint32Array can view). */
function bytes(b64: string): ArrayBuffer {
  const b = Buffer.from(b64, 'base64');
  const out = new ArrayBuffer(b.length);
  new Uint8Array(out).set(b);
  return out;
}
const caseBits = new Uint32Array(bytes(fixture.cases.f32Bits));
const caseClass = new Uint8Array(bytes(fixture.cases.class));
const expected: Record<HalfDtype, Uint16Array> = {
  float16: new Uint16Array(bytes(fixture.cases.float16)),
  bfloat16: new Uint16Array(bytes(fixture.cases.bfloat16)),
};
const DTYPES: HalfDtype[] = ['float16', 'bfloat16'];
const FRAC_BITS: Record<HalfDtype, number> = { float16: 10, bfloat16: 7 };
const hex = (v: number, w: number) => '0x' + v.toString(16).padStart(w, '0');
const isF32NaN = (b: number) => (b & 0x7fffffff) > 0x7f800000;

describe('half reference: decoding every pattern', () => {
  for (const dtype of DTYPES) {
    it(`${dtype}: the float32 bits of all 65536 values hash as NumPy / ml_dtypes say`, () => {
      const all = new Uint32Array(65536);
      for (let p = 0; p < 65536; p++) {
        const b = halfToF32Bits(p, dtype);
        // The fixture's hash ignores NaN payloads (the libraries disagree on them; ours are
        // checked below) but not NaN signs.
        all[p] = isF32NaN(b) ? ((b & 0x80000000) | 0x7fc00000) >>> 0 : b;
      }
      const digest = createHash('sha256').update(new Uint8Array(all.buffer)).digest('hex');
      expect(digest).toBe(fixture.toF32Sha256[dtype]);
    });

    it(`${dtype}: the number and bits forms agree, and NaN patterns follow the documented rule`, () => {
      const p = FRAC_BITS[dtype];
      for (let h = 0; h < 65536; h++) {
        const v = halfToF32(h, dtype);
        const b = halfToF32Bits(h, dtype);
        if (halfIsNaN(h, dtype)) {
          expect(v).toBeNaN();
          const frac = h & ((1 << p) - 1);
          // bfloat16: the pattern shifted up as it is; float16: the quiet bit set.
          const want = dtype === 'bfloat16' ? h * 0x10000 : ((h & 0x8000 ? 0x80000000 : 0) | 0x7fc00000 | (frac << (23 - p))) >>> 0;
          expect(b).toBe(want);
        } else if (!Object.is(v, f32FromBits(b))) {
          expect.fail(`${dtype} ${hex(h, 4)}: value ${v}, bits ${hex(b, 8)}`);
        }
      }
    });
  }

  it('known values', () => {
    expect(f16ToF32(0x3c00)).toBe(1);
    expect(f16ToF32(0xc000)).toBe(-2);
    expect(f16ToF32(0x7bff)).toBe(65504);
    expect(f16ToF32(0x0400)).toBe(2 ** -14);
    expect(f16ToF32(0x03ff)).toBe(2 ** -14 - 2 ** -24);
    expect(f16ToF32(0x0001)).toBe(2 ** -24);
    expect(Object.is(f16ToF32(0x8000), -0)).toBe(true);
    expect(f16ToF32(0x7c00)).toBe(Infinity);
    expect(f16ToF32(0xfc00)).toBe(-Infinity);
    expect(f16ToF32(0x7e00)).toBeNaN();
    expect(f16ToF32(0x7c01)).toBeNaN();
    expect(bf16ToF32(0x3f80)).toBe(1);
    expect(bf16ToF32(0x7f7f)).toBe((2 - 2 ** -7) * 2 ** 127);
    expect(bf16ToF32(0x0080)).toBe(2 ** -126);
    expect(bf16ToF32(0x0001)).toBe(2 ** -133);
    expect(Object.is(bf16ToF32(0x8000), -0)).toBe(true);
    expect(bf16ToF32(0xff80)).toBe(-Infinity);
    expect(bf16ToF32(0x7fc0)).toBeNaN();
    // bfloat16 is float32's top half: decoding must equal the float32 with those top bits.
    for (let h = 0; h < 65536; h++) {
      if (!halfIsNaN(h, 'bfloat16') && halfToF32Bits(h, 'bfloat16') !== (h << 16) >>> 0) expect.fail(`bfloat16 ${hex(h, 4)}`);
    }
  });
});

describe('half reference: rounding float32 against NumPy / ml_dtypes', () => {
  it('the fixture covers every boundary class', () => {
    const counts = new Array<number>(fixture.cases.classNames.length).fill(0);
    for (const c of caseClass) counts[c]! += 1;
    expect(caseBits.length).toBe(fixture.cases.count);
    expect(counts.every((n) => n > 0)).toBe(true);
  });

  for (const dtype of DTYPES) {
    it(`${dtype}: ${fixture.cases.count} cases`, () => {
      const bad: string[] = [];
      const want = expected[dtype];
      for (let i = 0; i < caseBits.length; i++) {
        const b = caseBits[i]!;
        const got = f32BitsToHalf(b, dtype);
        const w = want[i]!;
        // NaN payloads are a documented choice of ours (tested below); the libraries' differ.
        const ok = isF32NaN(b) ? halfIsNaN(got, dtype) && halfIsNaN(w, dtype) && (got & 0x8000) === (w & 0x8000) : got === w;
        // The number form must agree wherever a number can carry the input.
        const viaNumber = isF32NaN(b) ? got : f32ToHalf(f32FromBits(b), dtype);
        if ((!ok || viaNumber !== got) && bad.length < 10) {
          const cls = fixture.cases.classNames[caseClass[i]!];
          bad.push(`${cls} ${hex(b, 8)} (${f32FromBits(b)}): got ${hex(got, 4)}, number form ${hex(viaNumber, 4)}, expected ${hex(w, 4)}`);
        }
      }
      expect(bad).toEqual([]);
    });
  }

  it('NaN inputs: sign and quiet bit set, top payload bits kept', () => {
    for (const b of [0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fa12345, 0x7f802000, 0x7fffffff, 0xffbfe000]) {
      const sign = b >= 0x80000000 ? 0x8000 : 0;
      expect(f32BitsToHalf(b, 'float16')).toBe(sign | 0x7e00 | ((b & 0x7fffff) >>> 13));
      expect(f32BitsToHalf(b, 'bfloat16')).toBe((b >>> 16) | 0x0040);
    }
    expect(f32ToF16(NaN) & 0x7fff).toBe(0x7e00);
    expect(f32ToBf16(NaN) & 0x7fff).toBe(0x7fc0);
  });

  it('hand-checked boundaries', () => {
    const f = Math.fround;
    expect(f32ToF16(65504)).toBe(0x7bff);
    expect(f32ToF16(f(65520 - 2 ** -8))).toBe(0x7bff); // one float32 ulp under the threshold
    expect(f32ToF16(65520)).toBe(0x7c00); // the midpoint to 2^16 ties to even: Inf
    expect(f32ToF16(-65520)).toBe(0xfc00);
    expect(f32ToF16(f(1e30))).toBe(0x7c00);
    expect(f32ToF16(Infinity)).toBe(0x7c00);
    expect(f32ToF16(2 ** -24)).toBe(0x0001);
    expect(f32ToF16(2 ** -25)).toBe(0x0000); // half the smallest subnormal ties to 0
    expect(f32ToF16(-(2 ** -25))).toBe(0x8000);
    expect(f32ToF16(f(2 ** -25 * (1 + 2 ** -23)))).toBe(0x0001);
    expect(f32ToF16(3 * 2 ** -25)).toBe(0x0002); // 1.5 quanta ties to 2
    expect(f32ToF16(f(1e-30))).toBe(0x0000);
    expect(f32ToF16(1 + 2 ** -11)).toBe(0x3c00); // tie, even below
    expect(f32ToF16(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie, even above
    expect(f32ToF16(2 ** -14 - 2 ** -25)).toBe(0x0400); // largest subnormal's upper midpoint rounds into the normals
    expect(f32ToBf16(1 + 2 ** -8)).toBe(0x3f80);
    expect(f32ToBf16(1 + 3 * 2 ** -8)).toBe(0x3f82);
    expect(f32ToBf16(f32FromBits(0x7f7fffff))).toBe(0x7f80); // FLT_MAX is past bfloat16's overflow threshold
    expect(f32ToBf16(f32FromBits(0x7f7f7fff))).toBe(0x7f7f);
    expect(f32ToBf16(f32FromBits(0x7f7f8000))).toBe(0x7f80);
    expect(f32ToBf16(2 ** -134)).toBe(0x0000);
    expect(f32ToBf16(f32FromBits(0x00008001))).toBe(0x0001);
    expect(f32ToBf16(-0)).toBe(0x8000);
    expect(f32ToBf16(-Infinity)).toBe(0xff80);
  });
});

describe('half reference: round trips over all 65536 patterns', () => {
  for (const dtype of DTYPES) {
    it(dtype, () => {
      const quiet = 1 << (FRAC_BITS[dtype] - 1);
      for (let p = 0; p < 65536; p++) {
        const back = f32BitsToHalf(halfToF32Bits(p, dtype), dtype);
        if (halfIsNaN(p, dtype)) {
          if (back !== (p | quiet)) expect.fail(`${dtype} NaN ${hex(p, 4)} → ${hex(back, 4)}`);
        } else if (back !== p || f32ToHalf(halfToF32(p, dtype), dtype) !== p) {
          expect.fail(`${dtype} ${hex(p, 4)} → ${hex(back, 4)}`);
        }
      }
    });
  }
});

describe('half reference: ulps', () => {
  for (const dtype of DTYPES) {
    it(`${dtype}: halfUlp is the gap to the next value up; halfUlpDiff counts values`, () => {
      const inf = halfIsInf(0x7c00, dtype) ? 0x7c00 : 0x7f80;
      const emax = dtype === 'float16' ? 15 : 127;
      for (let p = 0; p < inf; p++) {
        // The Inf pattern stands for 2^(emax+1), where the largest finite's binade ends.
        const next = p + 1 === inf ? 2 ** (emax + 1) : halfToF32(p + 1, dtype);
        const gap = next - halfToF32(p, dtype);
        if (halfUlp(p, dtype) !== gap || halfUlp(p | 0x8000, dtype) !== gap) expect.fail(`${dtype} ${hex(p, 4)}: ulp ${halfUlp(p, dtype)}, gap ${gap}`);
      }
      expect(halfUlp(inf, dtype)).toBe(Infinity);
      expect(halfUlp(inf + 1, dtype)).toBeNaN();

      const max = inf - 1;
      expect(halfUlpDiff(0x0000, 0x8000, dtype)).toBe(0);
      expect(halfUlpDiff(0x0001, 0x8001, dtype)).toBe(2);
      expect(halfUlpDiff(0x8000, 0x0001, dtype)).toBe(1);
      expect(halfUlpDiff(max, max - 5, dtype)).toBe(5);
      expect(halfUlpDiff(max | 0x8000, max, dtype)).toBe(2 * max);
      expect(halfUlpDiff(inf, inf, dtype)).toBe(0);
      expect(halfUlpDiff(inf, max, dtype)).toBe(Infinity);
      expect(halfUlpDiff(inf, inf | 0x8000, dtype)).toBe(Infinity);
      expect(halfUlpDiff(inf + 1, 0xffff, dtype)).toBe(0);
      expect(halfUlpDiff(inf + 1, 0, dtype)).toBe(Infinity);
      expect(halfUlpDiff(inf, inf + 1, dtype)).toBe(Infinity);
      // Between neighbours in value order the distance is 1, across zero and binades alike.
      const finite = [];
      for (let p = 0; p < 65536; p++) if (!halfIsNaN(p, dtype) && !halfIsInf(p, dtype) && p !== 0x8000) finite.push(p);
      finite.sort((a, b) => halfToF32(a, dtype) - halfToF32(b, dtype));
      for (let i = 1; i < finite.length; i++) {
        if (halfUlpDiff(finite[i - 1]!, finite[i]!, dtype) !== 1) expect.fail(`${dtype} ${hex(finite[i - 1]!, 4)} ${hex(finite[i]!, 4)}`);
      }
    });
  }
});

describe('half reference: arrays and argument checks', () => {
  it('toF32Array / fromF32Array keep bits, NaN payloads included', () => {
    for (const dtype of DTYPES) {
      const all = new Uint16Array(65536).map((_, i) => i);
      const f = toF32Array(all, dtype);
      const fb = new Uint32Array(f.buffer);
      for (let p = 0; p < 65536; p++) if (fb[p] !== halfToF32Bits(p, dtype)) expect.fail(`${dtype} ${hex(p, 4)}`);
      const back = fromF32Array(f, dtype);
      for (let p = 0; p < 65536; p++) if (back[p] !== (halfIsNaN(p, dtype) ? p | (1 << (FRAC_BITS[dtype] - 1)) : p)) expect.fail(`${dtype} ${hex(p, 4)}`);
    }
    // A Float32Array at an offset, holding a negative NaN with a payload.
    const buf = new Float32Array(3);
    new Uint32Array(buf.buffer).set([0x3f800000, 0xffa12345, 0x477ff000]);
    expect(Array.from(fromF32Array(buf.subarray(1), 'float16'))).toEqual([0xfe00 | (0x212345 >>> 13), 0x7c00]);
    expect(Array.from(fromF32Array([1, -2, 0.5], 'bfloat16'))).toEqual([0x3f80, 0xc000, 0x3f00]);
  });

  it('rejects what is not a pattern, a float32 or a dtype', () => {
    expect(() => f32ToF16(0.1)).toThrow(RangeError); // a float64, not a float32
    expect(() => fromF32Array([0.1], 'float16')).toThrow(RangeError);
    expect(f32ToF16(Math.fround(0.1))).toBe(0x2e66);
    expect(() => f16ToF32(65536)).toThrow(RangeError);
    expect(() => f16ToF32(-1)).toThrow(RangeError);
    expect(() => bf16ToF32(1.5)).toThrow(RangeError);
    expect(() => f32BitsToHalf(2 ** 32, 'float16')).toThrow(RangeError);
    expect(() => halfToF32(0, 'float32' as HalfDtype)).toThrow(RangeError);
    expect(f32BitsOf(-0)).toBe(0x80000000);
    expect(f32BitsOf(1)).toBe(0x3f800000);
  });
});
