//! The scalar float16 / bfloat16 ↔ f32 conversions on `u16` bit patterns: the definitions
//! that [`crate::simd::F32x4`]'s vector loads and stores and [`crate::elem`]'s storage types
//! must match bit for bit (they are exact or correctly rounded, so there is one right answer —
//! only NaNs leave a choice, fixed here):
//! - widening is exact: bf16 → f32 is a shift (a NaN keeps its bits); f16 → f32 moves a NaN's
//!   payload up and sets the quiet bit (as x86's F16C and Rust's `half` crate do).
//! - narrowing rounds to nearest, ties to even; overflow gives ±Inf; a NaN gives a quiet NaN
//!   of the same sign keeping the top of its payload: bf16 is the f32's top 16 bits with the
//!   quiet bit (0x0040) set, f16 is `sign | 0x7e00 | mantissa >> 13`.
//!
//! A module of its own, depending on nothing, so that `simd` can use it without depending on
//! `half` (which depends on `simd`).

/// bfloat16 bits to f32: the top half of an f32.
#[inline(always)]
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// f32 to bfloat16 bits, round to nearest even.
#[inline(always)]
pub fn f32_to_bf16(v: f32) -> u16 {
    let b = v.to_bits();
    if v.is_nan() {
        return ((b >> 16) | 0x0040) as u16;
    }
    // Adding 0x7fff plus the lowest kept bit rounds the dropped half to nearest, ties to even;
    // a carry out of the mantissa bumps the exponent (up to Inf), as rounding should.
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// float16 bits to f32 (exact; subnormals, ±Inf and NaN payloads included).
#[inline(always)]
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let em = (h & 0x7fff) as u32;
    let v = if em >= 0x7c00 {
        // Inf / NaN: all-ones exponent, the mantissa moved up, a NaN made quiet.
        (em << 13) | 0x7f80_0000 | if em > 0x7c00 { 0x0040_0000 } else { 0 }
    } else if em >= 0x0400 {
        // Normal: the exponent rebiased (15 → 127) by an integer add.
        (em << 13) + ((127 - 15) << 23)
    } else {
        // Subnormal (or zero): m·2^-24, formed as the normal f32 2^-14·(1 + m/1024) minus
        // 2^-14 — exact, and with no subnormal operand (x86 takes a slow assist on those).
        (f32::from_bits((em << 13) + ((127 - 14) << 23)) - f32::from_bits((127 - 14) << 23))
            .to_bits()
    };
    f32::from_bits(v | sign)
}

/// f32 to float16 bits, round to nearest even (subnormal results, overflow to Inf).
#[inline(always)]
pub fn f32_to_f16(v: f32) -> u16 {
    let b = v.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let a = b & 0x7fff_ffff;
    let r = if a > 0x7f80_0000 {
        0x7e00 | ((a >> 13) & 0x3ff) as u16 // NaN: quiet, the payload's top bits
    } else if a >= 0x4780_0000 {
        0x7c00 // |v| ≥ 65536 (Inf included): past the largest finite half's rounding range
    } else if a < 0x3880_0000 {
        // |v| < 2^-14: a subnormal or zero half. Adding 0.5 (2^-1) puts the half's 10 bits
        // (units of 2^-24) at the bottom of an f32 mantissa, and that addition rounds them
        // to nearest even as IEEE f32 addition does.
        let m = f32::from_bits(a) + 0.5;
        (m.to_bits() - 0x3f00_0000) as u16
    } else {
        // Normal: rebias the exponent, then round the 13 dropped bits to nearest even (a
        // carry out of the mantissa bumps the exponent, up to Inf at 65520).
        let odd = (a >> 13) & 1;
        ((a - ((127 - 15) << 23) + 0xfff + odd) >> 13) as u16
    };
    r | sign
}
