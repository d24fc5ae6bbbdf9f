//! SIMD128 implementation of [`F32x4`]: thin wrappers over `core::arch::wasm32`.

use super::F32x4;
use core::arch::wasm32::*;

/// One `v128` holding four f32 lanes.
#[derive(Clone, Copy)]
pub struct V128(v128);

impl F32x4 for V128 {
    #[inline(always)]
    fn zero() -> Self {
        V128(f32x4_splat(0.0))
    }
    #[inline(always)]
    fn splat(v: f32) -> Self {
        V128(f32x4_splat(v))
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        V128(v128_load(p as *const v128))
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        v128_store(p as *mut v128, self.0)
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        V128(f32x4_add(self.0, o.0))
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        V128(f32x4_sub(self.0, o.0))
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        V128(f32x4_mul(self.0, o.0))
    }
    #[inline(always)]
    fn lanes(self) -> [f32; 4] {
        let v = self.0;
        [
            f32x4_extract_lane::<0>(v),
            f32x4_extract_lane::<1>(v),
            f32x4_extract_lane::<2>(v),
            f32x4_extract_lane::<3>(v),
        ]
    }
    #[inline(always)]
    fn from_lanes(l: [f32; 4]) -> Self {
        V128(f32x4(l[0], l[1], l[2], l[3]))
    }
    #[inline(always)]
    unsafe fn load_bf16(p: *const u16) -> Self {
        V128(i32x4_shl(load4_u16(p), 16))
    }
    #[inline(always)]
    unsafe fn store_bf16(self, p: *mut u16) {
        store4_u16(p, to_bf16_bits(self.0))
    }
    #[inline(always)]
    unsafe fn load_f16(p: *const u16) -> Self {
        V128(f16_bits_to_f32(load4_u16(p)))
    }
    #[inline(always)]
    unsafe fn store_f16(self, p: *mut u16) {
        store4_u16(p, to_f16_bits(self.0))
    }
    #[inline(always)]
    fn round_bf16(self) -> Self {
        V128(i32x4_shl(to_bf16_bits(self.0), 16))
    }
    #[inline(always)]
    fn round_f16(self) -> Self {
        V128(f16_bits_to_f32(to_f16_bits(self.0)))
    }
    #[inline(always)]
    fn hsum(self) -> f32 {
        let v = self.0;
        (f32x4_extract_lane::<0>(v) + f32x4_extract_lane::<1>(v))
            + (f32x4_extract_lane::<2>(v) + f32x4_extract_lane::<3>(v))
    }
}

// The half conversions of `crate::half`, four lanes at a time with integer ops and selects
// (every branch computed, the right one kept), so they give the scalar functions' bits.

/// Four u16 at `p` zero-extended into u32 lanes.
#[inline(always)]
unsafe fn load4_u16(p: *const u16) -> v128 {
    u32x4_extend_low_u16x8(v128_load64_zero(p as *const u64))
}

/// The low 16 bits of four u32 lanes (each at most 0xffff) stored at `p`.
#[inline(always)]
unsafe fn store4_u16(p: *mut u16, bits: v128) {
    v128_store64_lane::<0>(u16x8_narrow_i32x4(bits, bits), p as *mut u64)
}

/// f32 lanes to bfloat16 bits in u32 lanes: `half::f32_to_bf16`.
#[inline(always)]
fn to_bf16_bits(v: v128) -> v128 {
    let hi = u32x4_shr(v, 16);
    let rounded = u32x4_shr(
        i32x4_add(i32x4_add(v, u32x4_splat(0x7fff)), v128_and(hi, u32x4_splat(1))),
        16,
    );
    let quiet = v128_or(hi, u32x4_splat(0x0040));
    v128_bitselect(quiet, rounded, f32x4_ne(v, v))
}

/// float16 bits in u32 lanes to f32 lanes: `half::f16_to_f32`.
///
/// Normal halves: the exponent and mantissa moved to an f32's place and rebiased by an integer
/// add; Inf/NaN then given an all-ones exponent (and a NaN its quiet bit). Subnormal halves:
/// the mantissa converted to f32 and scaled by 2^-24, both exact and with normal operands —
/// moving them as bits and scaling by 2^112 would feed subnormal f32s to the multiply, which
/// x86 runs through a microcode assist (~100 cycles): 4× slower on rows of small values.
#[inline(always)]
fn f16_bits_to_f32(h: v128) -> v128 {
    let em = v128_and(h, u32x4_splat(0x7fff));
    let sign = i32x4_shl(v128_xor(h, em), 16);
    let normal = i32x4_add(i32x4_shl(em, 13), u32x4_splat((127 - 15) << 23));
    let sub = f32x4_mul(f32x4_convert_i32x4(em), f32x4_splat(f32::from_bits((127 - 24) << 23)));
    let finite = v128_bitselect(sub, normal, i32x4_lt(em, i32x4_splat(0x0400)));
    let inf_nan = v128_and(i32x4_gt(em, i32x4_splat(0x7bff)), u32x4_splat(0x7f80_0000));
    let quiet = v128_and(i32x4_gt(em, i32x4_splat(0x7c00)), u32x4_splat(0x0040_0000));
    v128_or(v128_or(finite, inf_nan), v128_or(quiet, sign))
}

/// f32 lanes to float16 bits in u32 lanes: `half::f32_to_f16`.
#[inline(always)]
fn to_f16_bits(v: v128) -> v128 {
    let sign = u32x4_shr(v128_and(v, u32x4_splat(0x8000_0000)), 16);
    // |v| as bits: non-negative, so signed compares order it.
    let a = v128_and(v, u32x4_splat(0x7fff_ffff));
    let sub = i32x4_sub(
        f32x4_add(a, f32x4_splat(0.5)),
        u32x4_splat(0x3f00_0000),
    );
    let odd = v128_and(u32x4_shr(a, 13), u32x4_splat(1));
    let normal = u32x4_shr(
        i32x4_add(i32x4_sub(a, u32x4_splat((127 - 15) << 23)), i32x4_add(u32x4_splat(0xfff), odd)),
        13,
    );
    let r = v128_bitselect(sub, normal, i32x4_lt(a, i32x4_splat(0x3880_0000)));
    let r = v128_bitselect(u32x4_splat(0x7c00), r, i32x4_ge(a, i32x4_splat(0x4780_0000)));
    let nan = v128_or(u32x4_splat(0x7e00), v128_and(u32x4_shr(a, 13), u32x4_splat(0x3ff)));
    let r = v128_bitselect(nan, r, i32x4_gt(a, i32x4_splat(0x7f80_0000)));
    v128_or(r, sign)
}
