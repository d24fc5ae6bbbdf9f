//! A four-lane f32 vector, the only thing the kernels know about SIMD.
//!
//! Two implementations: [`wasm32`] (SIMD128 intrinsics) when compiled for wasm32 with
//! `+simd128`, and [`portable`] (`[f32; 4]`) everywhere else: on the host for `cargo test`, and
//! in the `scalar` wasm build. Both have four lanes and every operation is lane-wise IEEE
//! single precision without fused multiply-add, so a kernel gives the same bits on either.

pub mod portable;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub mod wasm32;

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
}

/// The vector type the exported kernels use in this build.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub type Native = wasm32::V128;
/// The vector type the exported kernels use in this build.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
pub type Native = portable::Portable;
