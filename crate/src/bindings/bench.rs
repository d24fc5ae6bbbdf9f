//! The benchmark's comparison kernels (LayerNorm, copy, add), exported only by the build with
//! feature `bench-kernels`: the package does not ship them. Same rules as the parent module.

use super::checks::{matrix, span, status};
use crate::kernel;
use crate::simd::Native;
use wasm_bindgen::prelude::*;

/// LayerNorm forward (benchmark comparison): `y = (x − mean)·rstd·w + b`; `w`, `b` may be 0.
/// Only in the benchmark's build (feature `bench-kernels`): the package does not ship it.
#[wasm_bindgen]
pub fn layer_norm_forward(
    x: usize,
    w: usize,
    b: usize,
    y: usize,
    rows: usize,
    dim: usize,
    eps: f32,
) -> u32 {
    status((|| {
        let n = matrix(rows, dim)?;
        span(x, n, true)?;
        span(y, n, true)?;
        span(w, dim, false)?;
        span(b, dim, false)?;
        // SAFETY: checked above.
        unsafe {
            kernel::layer_norm_forward::<Native>(
                x as *const f32,
                w as *const f32,
                b as *const f32,
                y as *mut f32,
                rows,
                dim,
                eps,
            )
        };
        Ok(())
    })())
}

/// Copies `n` floats from `src` to `dst` (no overlap) with vector loads and stores: the
/// benchmark's memory-bandwidth roof. Only in the benchmark's build (feature `bench-kernels`).
#[wasm_bindgen]
pub fn copy_f32(src: usize, dst: usize, n: usize) -> u32 {
    status((|| {
        span(src, n, true)?;
        span(dst, n, true)?;
        // SAFETY: checked above; non-overlap is the caller's contract.
        unsafe { kernel::copy::<Native>(src as *const f32, dst as *mut f32, n) };
        Ok(())
    })())
}

/// `out = a + b` over `n` floats (`out` may equal `a` or `b`): the benchmark's unfused residual
/// add. Only in the benchmark's build (feature `bench-kernels`).
#[wasm_bindgen]
pub fn add_f32(a: usize, b: usize, out: usize, n: usize) -> u32 {
    status((|| {
        span(a, n, true)?;
        span(b, n, true)?;
        span(out, n, true)?;
        // SAFETY: checked above; the kernel reads each element before writing it.
        unsafe { kernel::add::<Native>(a as *const f32, b as *const f32, out as *mut f32, n) };
        Ok(())
    })())
}
