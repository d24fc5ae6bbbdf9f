//! The benchmark's Rust peer: RMSNorm over rows with rten-vecmath 0.27, as rten's
//! RMSNormalization operator computes it (`SumSquare` for the mean of squares, then
//! `Normalize` with the gain as `element_scale`), compiled with the package's toolchain and
//! `+simd128`, and called from JavaScript as raw exports on this module's own memory.
//! Built by `build.sh bench-simd`; the package never ships it.

use rten_vecmath::{Normalize, NormalizeOptions, SumSquare};
use rten_simd::SimdOp;

/// `len` floats of this module's memory (16-byte aligned), for the benchmark's inputs.
#[no_mangle]
pub extern "C" fn alloc_f32(len: usize) -> *mut f32 {
    let mut v = Vec::<f32>::with_capacity(len.max(4));
    let p = v.as_mut_ptr();
    core::mem::forget(v);
    p
}

/// `y = x · rstd · w` per row of `dim`, `rstd = 1/sqrt(mean(x²) + eps)`.
///
/// # Safety
/// `x` and `y` hold `rows × dim` floats, `w` holds `dim`; `y` does not overlap `x`.
#[no_mangle]
pub unsafe extern "C" fn rms_norm(x: *const f32, w: *const f32, y: *mut f32, rows: usize, dim: usize, eps: f32) {
    let w = core::slice::from_raw_parts(w, dim);
    for r in 0..rows {
        let row = core::slice::from_raw_parts(x.add(r * dim), dim);
        let out = core::slice::from_raw_parts_mut(y.add(r * dim) as *mut core::mem::MaybeUninit<f32>, dim);
        let ms = SumSquare::new(row).dispatch() / dim as f32;
        let scale = 1. / (ms + eps).sqrt();
        Normalize::new(row, out, NormalizeOptions { scale, element_scale: Some(w), ..Default::default() }).dispatch();
    }
}
