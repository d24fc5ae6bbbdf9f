//! The backward's entry points: one thread's span of rows, a pool shard, and the pool job's
//! reduction of the weight gradient's block partials.

use super::checks::{
    bit, call, matrix, operand_spans, span, status, work_span, Call, BACKWARD_ADDRS,
};
use crate::abi::{BackwardOperand as B, Gate, Status};
use crate::elem::{by_dtype, Elem};
use crate::kernel::{self, Backward};
use crate::simd::Native;
use wasm_bindgen::prelude::*;

/// A backward call's checked arguments: its block and addresses, the matrices checked for
/// `rows` rows from the addresses given.
fn backward_call(params: usize, addrs: usize, rows: usize) -> Result<Call<BACKWARD_ADDRS>, Status> {
    let c = call::<BACKWARD_ADDRS>(params, addrs)?;
    if c.p.out_dtype != 0 {
        // A quantized output has no gradient.
        return Err(Status::Dtype);
    }
    let (dim, es, a) = (c.p.dim as usize, c.es, c.a);
    // dy, x and dx always, z and dz with a gate; dweight and the workspace by each entry point.
    let gated = c.gate != Gate::None;
    operand_spans(
        &a,
        &B::EXTENTS,
        (rows, dim, es),
        None,
        bit(B::Dy as u32, true)
            | bit(B::X as u32, true)
            | bit(B::Dx as u32, true)
            | bit(B::Z as u32, gated)
            | bit(B::Dz as u32, gated),
    )?;
    if c.gate != Gate::None && a[B::Dresidual as usize] != 0 {
        return Err(Status::Gate);
    }
    Ok(c)
}

/// The kernel's view of a checked backward call, the activations stored as `A`.
fn backward_of<A: Elem>(c: &Call<BACKWARD_ADDRS>) -> Backward<A> {
    Backward::at(&c.a, 0, c.scalars())
}

/// RMSNorm backward over rows `[row0, row0 + rows)` of a `total`-row matrix, single-threaded
/// (see `kernel::backward_span`; the addresses, [`B`] order, point at row
/// `row0`): writes `dx` (may equal `dy` or `x`) and, with a weight, `dweight` (`dim` floats,
/// written by the span that reaches `total`), carrying the f64 sum of the finished dweight
/// blocks and the open block in the workspace (`3 × dim` floats, 8-byte aligned) from one
/// span to the next. With a gate also `dz`. One
/// call over everything: `row0 = 0`, `total = rows`. rstd (from the forward) may be 0 to
/// recompute it; the residual's gradient (or 0) is added to `dx`.
#[wasm_bindgen]
pub fn rms_norm_backward(
    params: usize,
    addrs: usize,
    row0: usize,
    rows: usize,
    total: usize,
) -> u32 {
    status((|| {
        let c = backward_call(params, addrs, rows)?;
        let (w, dim) = (c.a[B::Weight as usize] != 0, c.p.dim as usize);
        span(c.a[B::Dweight as usize], dim, w)?;
        work_span(c.a[B::Work as usize], kernel::span_work_floats(dim), w)?;
        if row0.checked_add(rows).is_none_or(|end| end > total) {
            return Err(Status::Shard);
        }
        fn go<A: Elem>(c: &Call<BACKWARD_ADDRS>, s: [usize; 3]) -> Result<(), Status> {
            let (dg, work) = (
                c.a[B::Dweight as usize] as *mut f32,
                c.a[B::Work as usize] as *mut f32,
            );
            // SAFETY: every range was checked to lie inside memory.
            unsafe {
                kernel::backward_span::<Native, A>(&backward_of::<A>(c), s[0], s[1], s[2], dg, work)
            }
            .map_err(|_| Status::Memory)
        }
        by_dtype!(c.p.dtypes, go(&c, [row0, rows, total]))
    })())
}

/// One pool shard of the backward: rows `[row0, row1)` of a `rows`-row problem whose row 0
/// the addresses give, `row0` a multiple of [`super::dg_block_rows`]. With a weight, block partials
/// go to the workspace (after its f64 sum: `(2 + ceil(rows / dg_block_rows)) × dim` floats); add them with
/// [`rms_norm_backward_reduce`]. Otherwise as [`rms_norm_backward`].
#[wasm_bindgen]
pub fn rms_norm_backward_rows(
    params: usize,
    addrs: usize,
    row0: usize,
    row1: usize,
    rows: usize,
) -> u32 {
    status((|| {
        let c = backward_call(params, addrs, rows)?;
        if row0 > row1 || row1 > rows || row0 % kernel::DG_BLOCK_ROWS != 0 {
            return Err(Status::Shard);
        }
        let (w, dim) = (c.a[B::Weight as usize] != 0, c.p.dim as usize);
        let blocks = kernel::dg_blocks(rows);
        matrix(blocks, dim)?;
        work_span(
            c.a[B::Work as usize],
            kernel::pool_work_floats(blocks, dim),
            w,
        )?;
        fn go<A: Elem>(c: &Call<BACKWARD_ADDRS>, row0: usize, row1: usize) -> Result<(), Status> {
            // SAFETY: every range was checked to lie inside memory.
            unsafe {
                kernel::backward_rows::<Native, A>(
                    &backward_of::<A>(c),
                    row0,
                    row1,
                    c.a[B::Work as usize] as *mut f32,
                )
            }
            .map_err(|_| Status::Memory)
        }
        by_dtype!(c.p.dtypes, go(&c, row0, row1))
    })())
}

/// After a pool job's last shard: the workspace's block partials added in f64, in order, onto
/// zero or, when `accumulate` is 1, onto the workspace's sum as the previous job of the same
/// streamed matrix left it, and rounded into `dweight`. Nothing without a weight.
#[wasm_bindgen]
pub fn rms_norm_backward_reduce(params: usize, addrs: usize, rows: usize, accumulate: u32) -> u32 {
    status((|| {
        let c = call::<BACKWARD_ADDRS>(params, addrs)?;
        if c.a[B::Weight as usize] == 0 {
            return Ok(());
        }
        let (dim, blocks) = (c.p.dim as usize, kernel::dg_blocks(rows));
        let (work, dw) = (c.a[B::Work as usize], c.a[B::Dweight as usize]);
        matrix(blocks, dim)?;
        work_span(work, kernel::pool_work_floats(blocks, dim), true)?;
        span(dw, dim, true)?;
        // SAFETY: checked above.
        unsafe {
            kernel::reduce_partials(
                work as *mut f32,
                blocks,
                &c.scalars(),
                dw as *mut f32,
                accumulate != 0,
            )
        };
        Ok(())
    })())
}
