//! The scalar conversions that define a quantized output's codes: int8 and float8 E4M3FN (OCP,
//! no infinities, largest 448) from f32, rounded to nearest even. The kernels' vector forms
//! (`simd::F32x4::store16_i8`, `store16_e4m3`) must give the same bits.

/// Whether `v` is a NaN, from its bits (no float comparison: on the relaxed builds LLVM may
/// turn those into relaxed SIMD's min/max, whose NaN handling the engine chooses).
#[inline(always)]
pub fn nan(v: f32) -> bool {
    v.to_bits() & 0x7fff_ffff > 0x7f80_0000
}

/// `v` as an int8 code: rounded to nearest even, clamped to ±127; NaN becomes 0.
#[inline(always)]
pub fn to_i8(v: f32) -> i8 {
    if nan(v) {
        0
    } else {
        v.round_ties_even().clamp(-127.0, 127.0) as i8
    }
}

/// `v` as float8 E4M3FN bits: clamped to ±448 (as vLLM does before its cast), then rounded to
/// nearest even: sign, 4 exponent bits (bias 7), 3 mantissa bits. Every NaN becomes `0x7f`:
/// WebAssembly leaves a NaN's sign unspecified after arithmetic, so passing it on would make
/// the bits differ between engines.
#[inline(always)]
pub fn to_e4m3(v: f32) -> u8 {
    // Told apart before the clamp: vectorized on a relaxed build, the clamp may lose a NaN.
    if nan(v) {
        return 0x7f;
    }
    e4m3(v.clamp(-448.0, 448.0))
}

/// `v` (|v| ≤ 448, or NaN) as float8 E4M3FN bits, rounded to nearest even; NaN gives `0x7f`.
#[inline(always)]
pub fn e4m3(v: f32) -> u8 {
    let b = v.to_bits();
    let sign = ((b >> 24) & 0x80) as u8;
    if nan(v) {
        return 0x7f;
    }
    let a = f32::from_bits(b & 0x7fff_ffff);
    if a < 0.015625 {
        // Below 2^-6, the smallest normal: multiples of 2^-9 (subnormals); 8 of them is the
        // smallest normal's code. The scaling by 2^9 is exact.
        return sign | (a * 512.0).round_ties_even() as u8;
    }
    // A normal: the f32's exponent rebiased (127 → 7) and its 23 mantissa bits rounded to 3,
    // to nearest even (a carry into the exponent is the right result).
    let a = a.to_bits();
    let r = (a + 0x7_ffff + ((a >> 20) & 1)) >> 20;
    sign | (r - (120 << 3)) as u8
}
