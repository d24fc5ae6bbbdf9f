//! `[f32; 4]` implementation of [`F32x4`]: the host (tests) and the `scalar` wasm build.

use super::F32x4;

/// Four f32 lanes held in an array.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Portable(pub [f32; 4]);

impl Portable {
    #[inline(always)]
    fn zip(self, o: Self, f: impl Fn(f32, f32) -> f32) -> Self {
        let (a, b) = (self.0, o.0);
        Portable([f(a[0], b[0]), f(a[1], b[1]), f(a[2], b[2]), f(a[3], b[3])])
    }
}

impl F32x4 for Portable {
    #[inline(always)]
    fn zero() -> Self {
        Portable([0.0; 4])
    }
    #[inline(always)]
    fn splat(v: f32) -> Self {
        Portable([v; 4])
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        Portable(core::ptr::read_unaligned(p as *const [f32; 4]))
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        core::ptr::write_unaligned(p as *mut [f32; 4], self.0)
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self.zip(o, |a, b| a + b)
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        self.zip(o, |a, b| a - b)
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self.zip(o, |a, b| a * b)
    }
    #[inline(always)]
    fn lanes(self) -> [f32; 4] {
        self.0
    }
    #[inline(always)]
    fn from_lanes(l: [f32; 4]) -> Self {
        Portable(l)
    }
    #[inline(always)]
    fn hsum(self) -> f32 {
        let l = self.0;
        (l[0] + l[1]) + (l[2] + l[3])
    }
}
