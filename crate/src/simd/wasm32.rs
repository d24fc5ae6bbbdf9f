//! SIMD128 implementation of [`F32x4`]: thin wrappers over `core::arch::wasm32`.

use super::wasm32_half::{
    bf16_round_not_nan, f16_bits_to_f32, load4_f16, load4_u16, load8_f16_with, store4_bf16,
    store4_f16, store8_f16_not_nan_with, store8_slow, to_bf16_bits, to_f16_bits, Narrow16, Widen16,
};
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
    fn abs(self) -> Self {
        V128(f32x4_abs(self.0))
    }
    #[inline(always)]
    fn pmax(self, o: Self) -> Self {
        V128(f32x4_pmax(self.0, o.0))
    }
    /// As the default, in v128 operations: nearest, then `pmin` / `pmax`, then the saturating
    /// truncation, NaN lanes zeroed, narrowed twice with saturation.
    #[inline(always)]
    unsafe fn store16_i8(v: [Self; 4], p: *mut u8) {
        let (lo, hi) = (f32x4_splat(-127.0), f32x4_splat(127.0));
        // NaN lanes are zeroed by their own mask: on the relaxed builds LLVM may turn the
        // truncation of a clamped value into relaxed SIMD's, whose NaN result is the engine's.
        let c = |x: Self| {
            let t = i32x4_trunc_sat_f32x4(f32x4_pmax(f32x4_pmin(f32x4_nearest(x.0), hi), lo));
            v128_andnot(t, f32x4_ne(x.0, x.0))
        };
        let a = i16x8_narrow_i32x4(c(v[0]), c(v[1]));
        let b = i16x8_narrow_i32x4(c(v[2]), c(v[3]));
        v128_store(p as *mut v128, i8x16_narrow_i16x8(a, b));
    }
    /// As the default (`quant_bits::to_e4m3`), lane-wise on the bits: both the subnormal code
    /// (`|v| · 2^9` rounded) and the normal one (the mantissa rounded to 3 bits by an integer
    /// add, the exponent rebiased) are formed and one picked; NaN lanes get `0x7f`.
    #[inline(always)]
    unsafe fn store16_e4m3(v: [Self; 4], p: *mut u8) {
        let e = |x: Self| -> v128 {
            let c = f32x4_pmax(f32x4_pmin(x.0, f32x4_splat(448.0)), f32x4_splat(-448.0));
            let sign = v128_and(u32x4_shr(c, 24), u32x4_splat(0x80));
            let abs = v128_and(c, u32x4_splat(0x7fff_ffff));
            let sub = i32x4_trunc_sat_f32x4(f32x4_nearest(f32x4_mul(abs, f32x4_splat(512.0))));
            let odd = v128_and(u32x4_shr(abs, 20), u32x4_splat(1));
            let r = u32x4_shr(i32x4_add(i32x4_add(abs, u32x4_splat(0x7_ffff)), odd), 20);
            let normal = i32x4_sub(r, u32x4_splat(120 << 3));
            let small = f32x4_lt(abs, f32x4_splat(0.015625));
            let code = v128_or(v128_bitselect(sub, normal, small), sign);
            v128_bitselect(u32x4_splat(0x7f), code, f32x4_ne(x.0, x.0))
        };
        let a = u16x8_narrow_i32x4(e(v[0]), e(v[1]));
        let b = u16x8_narrow_i32x4(e(v[2]), e(v[3]));
        v128_store(p as *mut v128, u8x16_narrow_i16x8(a, b));
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
        store4_bf16(self.0, p)
    }
    #[inline(always)]
    unsafe fn load_f16(p: *const u16) -> Self {
        V128(load4_f16(p))
    }
    #[inline(always)]
    unsafe fn store_f16(self, p: *mut u16) {
        store4_f16(self.0, p)
    }
    #[inline(always)]
    unsafe fn load8_bf16(p: *const u16) -> [Self; 2] {
        // One 16-byte load; interleaving zero words below each half gives `bits << 16`
        // (x86: punpcklwd / punpckhwd, one instruction per four lanes).
        let v = v128_load(p as *const v128);
        let z = u16x8_splat(0);
        [
            V128(i16x8_shuffle::<0, 8, 1, 9, 2, 10, 3, 11>(z, v)),
            V128(i16x8_shuffle::<4, 12, 5, 13, 6, 14, 7, 15>(z, v)),
        ]
    }
    #[inline(always)]
    unsafe fn store8_bf16(v: [Self; 2], p: *mut u16) {
        let (a, b) = (v[0].0, v[1].0);
        // A NaN needs its own rule (the rounding add could carry into its exponent or sign);
        // outputs are almost never NaN, so one test per eight lanes sends those to the
        // four-lane path, and the rest round with four integer ops per four lanes.
        if v128_any_true(v128_or(f32x4_ne(a, a), f32x4_ne(b, b))) {
            return store8_slow([a, b], p, store4_bf16);
        }
        Self::store8_bf16_not_nan(v, p)
    }
    #[inline(always)]
    unsafe fn store8_bf16_not_nan(v: [Self; 2], p: *mut u16) {
        // The high halves of the eight rounded lanes, in order (x86: psrld + packusdw).
        v128_store(
            p as *mut v128,
            i16x8_shuffle::<1, 3, 5, 7, 9, 11, 13, 15>(
                bf16_round_not_nan(v[0].0),
                bf16_round_not_nan(v[1].0),
            ),
        );
    }
    #[inline(always)]
    unsafe fn load8_f16(p: *const u16) -> [Self; 2] {
        let [a, b] = load8_f16_with(p, &Widen16::new());
        [V128(a), V128(b)]
    }
    #[inline(always)]
    unsafe fn store8_f16(v: [Self; 2], p: *mut u16) {
        let (a, b) = (v[0].0, v[1].0);
        if v128_any_true(v128_or(f32x4_ne(a, a), f32x4_ne(b, b))) {
            return store8_slow([a, b], p, store4_f16);
        }
        Self::store8_f16_not_nan(v, p)
    }
    #[inline(always)]
    unsafe fn store8_f16_not_nan(v: [Self; 2], p: *mut u16) {
        store8_f16_not_nan_with(v[0].0, v[1].0, p, &Narrow16::new());
    }
    /// [`widen_f16`](super::wasm32_f16_rows::widen_f16): the short formula where a stretch allows.
    #[inline(always)]
    unsafe fn widen_f16(src: *const u16, dst: *mut f32, n: usize) {
        super::wasm32_f16_rows::widen_f16(src, dst, n)
    }
    /// [`narrow_f16`](super::wasm32_f16_rows::narrow_f16), its constants loaded once.
    #[inline(always)]
    unsafe fn narrow_f16(src: *const f32, dst: *mut u16, n: usize, not_nan: bool) {
        super::wasm32_f16_rows::narrow_f16(src, dst, n, not_nan)
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
