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
    fn hsum(self) -> f32 {
        let v = self.0;
        (f32x4_extract_lane::<0>(v) + f32x4_extract_lane::<1>(v))
            + (f32x4_extract_lane::<2>(v) + f32x4_extract_lane::<3>(v))
    }
}
