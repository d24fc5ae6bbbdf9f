//! The forward's entry point.

use super::checks::{bit, call, operand_spans, quant_of, status, Call, FORWARD_ADDRS};
use crate::abi::{ForwardOperand as F, Gate, Status};
use crate::elem::{by_dtype, Elem};
use crate::kernel::{self, Forward, Quant};
use crate::simd::Native;
use wasm_bindgen::prelude::*;

/// RMSNorm forward over rows `[row0, row1)` of matrices whose row 0 the address array gives
/// ([`F`] order): `y = h · rstd · (offset + w)` with `h = x`, or with a residual
/// `h = x + residual` written to `h` (may equal `x` or the residual); with a gate (`z`, and
/// `params.gate`) `silu(z)` multiplies after the norm or `x` before it. `y` may equal `x`. The
/// weight (f32, `dim`), rstd (f32, one per row), residual, h and z may be 0. `rstd = 1/sqrt(Σ
/// h² / stat + eps)` over the first `stat` elements of each row; the matrices are stored as
/// `params.dtypes` says, the math is f32 whatever they are. With `params.out_dtype` int8 or
/// float8 E4M3, `y` is quantized (`rows × dim` bytes; `kernel::forward_quant`) with
/// `params.quant_scale`, or with one scale per row written to the row scales (`rows` f32).
#[wasm_bindgen]
pub fn rms_norm_forward(params: usize, addrs: usize, row0: usize, row1: usize) -> u32 {
    status((|| {
        let c = call::<FORWARD_ADDRS>(params, addrs)?;
        let (dim, es, a) = (c.p.dim as usize, c.es, c.a);
        if row0 > row1 {
            return Err(Status::Shard);
        }
        let quant = quant_of(&c.p)?;
        // The rows this call touches, from row 0 of each operand: y is a quantized output's
        // bytes; x and y always, h with a residual, z with a gate, the row scales with a
        // quantized output that has no static scale.
        operand_spans(
            &a,
            &F::EXTENTS,
            (row1, dim, es),
            quant.map(|_| F::Y as usize),
            bit(F::X as u32, true)
                | bit(F::Y as u32, true)
                | bit(F::H as u32, a[F::Residual as usize] != 0)
                | bit(F::Z as u32, c.gate != Gate::None)
                | bit(F::RowScales as u32, quant.is_some_and(|q| q.scale == 0.0)),
        )?;
        if c.gate != Gate::None && a[F::Residual as usize] != 0 {
            return Err(Status::Gate);
        }
        fn go<A: Elem>(
            c: &Call<FORWARD_ADDRS>,
            quant: Option<Quant>,
            row0: usize,
            row1: usize,
        ) -> Result<(), Status> {
            let (a, dim) = (c.a, c.p.dim as usize);
            let k = Forward::<A>::at(&a, row0, c.scalars());
            // SAFETY: every range was checked to lie inside memory, stat to lie in the row.
            unsafe {
                match quant {
                    None => kernel::forward_with::<Native, A>(&k, row1 - row0),
                    Some(q) => {
                        let q = Quant {
                            out: (a[F::Y as usize] + row0 * dim) as *mut u8,
                            scales: match a[F::RowScales as usize] {
                                0 => core::ptr::null_mut(),
                                at => (at + 4 * row0) as *mut f32,
                            },
                            ..q
                        };
                        kernel::forward_quant::<Native, A>(&k, &q, row1 - row0)
                    }
                }
            }
            .map_err(|_| Status::Memory)
        }
        by_dtype!(c.p.dtypes, go(&c, quant, row0, row1))
    })())
}
