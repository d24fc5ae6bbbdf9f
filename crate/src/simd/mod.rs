//! A four-lane f32 vector, the only thing the kernels know about SIMD.
//!
//! Two implementations: [`wasm32`] (SIMD128 intrinsics) when compiled for wasm32 with
//! `+simd128`, and [`portable`] (`[f32; 4]`) everywhere else: on the host for `cargo test`, and
//! in the `scalar` wasm build. Both have four lanes and every operation is lane-wise IEEE
//! single precision without fused multiply-add, so a kernel gives the same bits on either.

use crate::half_bits as half;
use crate::quant_bits as quant;

pub mod portable;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub mod wasm32;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod wasm32_half;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod wasm32_f16_rows;

/// Lane-wise f32 arithmetic on four lanes.
pub trait F32x4: Copy {
    /// All lanes zero.
    fn zero() -> Self;
    /// All lanes `v`.
    fn splat(v: f32) -> Self;
    /// Loads 4 floats from `p` (no alignment needed).
    ///
    /// # Safety
    /// `p..p+4` must be readable.
    unsafe fn load(p: *const f32) -> Self;
    /// Stores 4 floats to `p` (no alignment needed).
    ///
    /// # Safety
    /// `p..p+4` must be writable.
    unsafe fn store(self, p: *mut f32);
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// `(l0 + l1) + (l2 + l3)`: a fixed order, so every implementation rounds alike.
    fn hsum(self) -> f32;

    // Half-precision storage. The scalar conversions of `crate::half_bits` define the bits; these
    // defaults apply them lane by lane, and a SIMD implementation must give the same bits.

    /// Loads 4 bfloat16 bit patterns from `p`, widened exactly.
    ///
    /// # Safety
    /// `p..p+4` must be readable.
    #[inline(always)]
    unsafe fn load_bf16(p: *const u16) -> Self {
        Self::from_lanes(core::array::from_fn(|i| half::bf16_to_f32(*p.add(i))))
    }
    /// Rounds the lanes to bfloat16 (nearest even) and stores their 4 bit patterns at `p`.
    ///
    /// # Safety
    /// `p..p+4` must be writable.
    #[inline(always)]
    unsafe fn store_bf16(self, p: *mut u16) {
        for (i, v) in self.lanes().into_iter().enumerate() {
            *p.add(i) = half::f32_to_bf16(v);
        }
    }
    /// Loads 4 float16 bit patterns from `p`, widened exactly.
    ///
    /// # Safety
    /// `p..p+4` must be readable.
    #[inline(always)]
    unsafe fn load_f16(p: *const u16) -> Self {
        Self::from_lanes(core::array::from_fn(|i| half::f16_to_f32(*p.add(i))))
    }
    /// Rounds the lanes to float16 (nearest even) and stores their 4 bit patterns at `p`.
    ///
    /// # Safety
    /// `p..p+4` must be writable.
    #[inline(always)]
    unsafe fn store_f16(self, p: *mut u16) {
        for (i, v) in self.lanes().into_iter().enumerate() {
            *p.add(i) = half::f32_to_f16(v);
        }
    }
    /// Eight bfloat16 bit patterns at `p` widened: lanes `p[0..4]` and `p[4..8]`. A SIMD
    /// implementation loads them in one go; the bits are those of two [`F32x4::load_bf16`].
    ///
    /// # Safety
    /// `p..p+8` must be readable.
    #[inline(always)]
    unsafe fn load8_bf16(p: *const u16) -> [Self; 2] {
        [Self::load_bf16(p), Self::load_bf16(p.add(4))]
    }
    /// `v[0]` then `v[1]` rounded to bfloat16 and stored at `p..p+8`: the bits of two
    /// [`F32x4::store_bf16`].
    ///
    /// # Safety
    /// `p..p+8` must be writable.
    #[inline(always)]
    unsafe fn store8_bf16(v: [Self; 2], p: *mut u16) {
        v[0].store_bf16(p);
        v[1].store_bf16(p.add(4));
    }
    /// [`F32x4::store8_bf16`] of lanes known not to be NaN (the caller's proof): the same bits,
    /// without the test a NaN needs.
    ///
    /// # Safety
    /// `p..p+8` must be writable.
    #[inline(always)]
    unsafe fn store8_bf16_not_nan(v: [Self; 2], p: *mut u16) {
        Self::store8_bf16(v, p)
    }
    /// Eight float16 bit patterns at `p` widened, as two [`F32x4::load_f16`].
    ///
    /// # Safety
    /// `p..p+8` must be readable.
    #[inline(always)]
    unsafe fn load8_f16(p: *const u16) -> [Self; 2] {
        [Self::load_f16(p), Self::load_f16(p.add(4))]
    }
    /// `v[0]` then `v[1]` rounded to float16 and stored at `p..p+8`, as two
    /// [`F32x4::store_f16`].
    ///
    /// # Safety
    /// `p..p+8` must be writable.
    #[inline(always)]
    unsafe fn store8_f16(v: [Self; 2], p: *mut u16) {
        v[0].store_f16(p);
        v[1].store_f16(p.add(4));
    }
    /// [`F32x4::store8_f16`] of lanes known not to be NaN, as [`F32x4::store8_bf16_not_nan`].
    ///
    /// # Safety
    /// `p..p+8` must be writable.
    #[inline(always)]
    unsafe fn store8_f16_not_nan(v: [Self; 2], p: *mut u16) {
        Self::store8_f16(v, p)
    }
    /// `n` float16 bit patterns at `src` widened into f32 at `dst` (no overlap). A SIMD
    /// implementation runs the loop itself, so that its conversion's constants stay in
    /// registers across it.
    ///
    /// # Safety
    /// `src` readable and `dst` writable for `n` elements.
    #[inline(always)]
    unsafe fn widen_f16(src: *const u16, dst: *mut f32, n: usize) {
        for i in 0..n {
            *dst.add(i) = half::f16_to_f32(*src.add(i));
        }
    }
    /// `n` f32 at `src` rounded to float16 bit patterns at `dst` (no overlap); `not_nan`: the
    /// caller knows no value is NaN. As [`F32x4::widen_f16`], the loop is the implementation's.
    ///
    /// # Safety
    /// `src` readable and `dst` writable for `n` elements.
    #[inline(always)]
    unsafe fn narrow_f16(src: *const f32, dst: *mut u16, n: usize, _not_nan: bool) {
        for i in 0..n {
            *dst.add(i) = half::f32_to_f16(*src.add(i));
        }
    }
    /// Each lane rounded to bfloat16 and widened back.
    #[inline(always)]
    fn round_bf16(self) -> Self {
        Self::from_lanes(
            self.lanes()
                .map(|v| half::bf16_to_f32(half::f32_to_bf16(v))),
        )
    }
    /// Each lane rounded to float16 and widened back.
    #[inline(always)]
    fn round_f16(self) -> Self {
        Self::from_lanes(self.lanes().map(|v| half::f16_to_f32(half::f32_to_f16(v))))
    }

    /// Each lane's magnitude (the sign bit cleared: NaN stays NaN).
    #[inline(always)]
    fn abs(self) -> Self {
        Self::from_lanes(
            self.lanes()
                .map(|v| f32::from_bits(v.to_bits() & 0x7fff_ffff)),
        )
    }
    /// Lane-wise `if self < o { o } else { self }`: a NaN in `o` never wins (the pseudo-max
    /// of SIMD128, `f32x4.pmax`, which every engine computes alike).
    #[inline(always)]
    fn pmax(self, o: Self) -> Self {
        let (a, b) = (self.lanes(), o.lanes());
        Self::from_lanes(core::array::from_fn(
            |i| if a[i] < b[i] { b[i] } else { a[i] },
        ))
    }

    // Quantized storage. The scalar conversions of `crate::quant_bits` define the codes; these
    // defaults apply them lane by lane, and a SIMD implementation must give the same bits.

    /// `v[0]..v[3]`'s 16 lanes as int8 codes (nearest even, clamped to ±127, NaN 0) at `p`.
    ///
    /// # Safety
    /// `p..p+16` must be writable.
    #[inline(always)]
    unsafe fn store16_i8(v: [Self; 4], p: *mut u8) {
        for (k, x) in v.into_iter().enumerate() {
            for (i, l) in x.lanes().into_iter().enumerate() {
                *p.add(4 * k + i) = quant::to_i8(l) as u8;
            }
        }
    }
    /// `v[0]..v[3]`'s 16 lanes as float8 E4M3FN bits (clamped to ±448, nearest even, NaN
    /// `0x7f`) at `p`.
    ///
    /// # Safety
    /// `p..p+16` must be writable.
    #[inline(always)]
    unsafe fn store16_e4m3(v: [Self; 4], p: *mut u8) {
        for (k, x) in v.into_iter().enumerate() {
            for (i, l) in x.lanes().into_iter().enumerate() {
                *p.add(4 * k + i) = quant::to_e4m3(l);
            }
        }
    }
    /// The four lanes, in order.
    fn lanes(self) -> [f32; 4];
    /// A vector of these four lanes.
    fn from_lanes(l: [f32; 4]) -> Self;
}

/// The vector type the exported kernels use in this build.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub type Native = wasm32::V128;
/// The vector type the exported kernels use in this build.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
pub type Native = portable::Portable;
