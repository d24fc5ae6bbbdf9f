//! The conversions between a storage type's elements and f32 over whole arrays: same rules as
//! the parent module (addresses in, status out, every range checked). The half-precision
//! conversions of the API, the weight's placement and the file functions' widening and
//! narrowing all come here, for whichever storage type `abi::DTYPES` lists.

use super::checks::{span, span_of, status};
use crate::abi::{Status, DTYPES, DTYPE_MASK};
use crate::elem::{self, by_dtype, Elem};
use crate::simd::Native;
use wasm_bindgen::prelude::*;

/// The checks of a conversion: `dtype` a storage type the activations may have, `n` of its
/// elements at `elems` and `n` floats at `f32s`, both inside memory.
fn elem_spans(elems: usize, f32s: usize, n: usize, dtype: u32) -> Result<(), Status> {
    let d = DTYPES
        .get(dtype as usize)
        .filter(|d| d.qmax == 0 && dtype & DTYPE_MASK == dtype)
        .ok_or(Status::Dtype)?;
    span_of(elems, n, d.bytes, true)?;
    span(f32s, n, true)
}

/// Widens `n` elements of storage type `dtype` (an `abi::Dtype` code) at `src` into f32 at
/// `dst` (`n` floats; no overlap). Exact.
#[wasm_bindgen]
pub fn widen(src: usize, dst: usize, n: usize, dtype: u32) -> u32 {
    status((|| {
        elem_spans(src, dst, n, dtype)?;
        fn go<A: Elem>(src: usize, dst: usize, n: usize) {
            // SAFETY: checked above; non-overlap is the caller's contract.
            unsafe { elem::widen::<Native, A>(src as *const A, dst as *mut f32, n) }
        }
        by_dtype!(dtype, go(src, dst, n));
        Ok(())
    })())
}

/// Rounds `n` floats at `src` to storage type `dtype` (an `abi::Dtype` code; nearest even)
/// into its elements at `dst` (`n` of them; no overlap).
#[wasm_bindgen]
pub fn narrow(src: usize, dst: usize, n: usize, dtype: u32) -> u32 {
    status((|| {
        elem_spans(dst, src, n, dtype)?;
        fn go<A: Elem>(src: usize, dst: usize, n: usize) {
            // SAFETY: checked above; non-overlap is the caller's contract.
            unsafe { elem::narrow::<Native, A>(src as *const f32, dst as *mut A, n, false) }
        }
        by_dtype!(dtype, go(src, dst, n));
        Ok(())
    })())
}
