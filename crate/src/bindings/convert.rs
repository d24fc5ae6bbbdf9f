//! The conversions between half-precision bit patterns and f32 over whole arrays: same rules
//! as the parent module (addresses in, status out, every range checked).

use super::{span, span_of, status, CODE_BF16, CODE_F16};
use crate::abi::{Status, DTYPES, DTYPE_MASK};
use crate::elem::{self, Bf16, Elem, F16};
use crate::simd::Native;
use wasm_bindgen::prelude::*;

/// The checks of a conversion: `dtype` a half type, `n` of its elements at `half` and `n`
/// floats at `f32s`, both inside memory.
fn half_spans(half: usize, f32s: usize, n: usize, dtype: u32) -> Result<(), Status> {
    if !DTYPES
        .get((dtype & DTYPE_MASK) as usize)
        .ok_or(Status::Dtype)?
        .half
    {
        return Err(Status::Dtype);
    }
    span_of(half, n, 2, true)?;
    span(f32s, n, true)
}

/// Widens `n` half-precision bit patterns at `src` (`dtype` 1 float16, 2 bfloat16) into f32
/// at `dst` (`n` floats; no overlap). Exact.
#[wasm_bindgen]
pub fn widen_half(src: usize, dst: usize, n: usize, dtype: u32) -> u32 {
    status((|| {
        half_spans(src, dst, n, dtype)?;
        fn go<A: Elem>(src: usize, dst: usize, n: usize) {
            // SAFETY: checked above; non-overlap is the caller's contract.
            unsafe { elem::widen::<Native, A>(src as *const A, dst as *mut f32, n) }
        }
        by_dtype!(dtype, go(src, dst, n));
        Ok(())
    })())
}

/// Rounds `n` floats at `src` to half precision (`dtype` 1 float16, 2 bfloat16; nearest even)
/// into bit patterns at `dst` (`n` u16; no overlap).
#[wasm_bindgen]
pub fn narrow_half(src: usize, dst: usize, n: usize, dtype: u32) -> u32 {
    status((|| {
        half_spans(dst, src, n, dtype)?;
        fn go<A: Elem>(src: usize, dst: usize, n: usize) {
            // SAFETY: checked above; non-overlap is the caller's contract.
            unsafe { elem::narrow::<Native, A>(src as *const f32, dst as *mut A, n) }
        }
        by_dtype!(dtype, go(src, dst, n));
        Ok(())
    })())
}
