//! The JavaScript boundary: thin `#[wasm_bindgen]` functions over [`crate::kernel`].
//!
//! A kernel call takes two addresses into this module's memory: its parameter block
//! ([`Params`]: the scalars and flags of the call) and its address array (one `u32` per operand,
//! in the order of [`ForwardOperand`] / [`BackwardOperand`]; 0 = absent), then row indices.
//! Each entry point checks that what it will touch lies inside the memory and returns a status
//! code rather than trapping, so no panic or out-of-bounds access can reach JavaScript as an
//! opaque `unreachable`. The TypeScript layer validates first and treats a non-zero status as a
//! bug.

use crate::abi::{
    BackwardOperand as B, Dtype, Extent, ForwardOperand as F, Gate, Params, Status, DTYPES,
    DTYPE_MASK,
};
use crate::elem::{by_dtype, Elem};
use crate::kernel::{self, Backward, Forward, Quant, Scalars};
use crate::simd::Native;
use core::arch::wasm32::memory_size;
use std::alloc::{alloc, dealloc, Layout};
use wasm_bindgen::prelude::*;

/// Address words of each operation's entry points: its operands (and the backward's workspace).
const FORWARD_ADDRS: usize = F::COUNT;
const BACKWARD_ADDRS: usize = B::COUNT;

/// Checks that `len` floats at `addr` lie inside memory (`required`: `addr` may not be 0).
fn span(addr: usize, len: usize, required: bool) -> Result<(), Status> {
    span_of(addr, len, 4, required)
}

/// Checks that `len` elements of `size` bytes at `addr` (aligned to `size`) lie inside memory.
fn span_of(addr: usize, len: usize, size: usize, required: bool) -> Result<(), Status> {
    if addr == 0 {
        return if required { Err(Status::Null) } else { Ok(()) };
    }
    if addr % size != 0 {
        return Err(Status::Align);
    }
    let bytes = len.checked_mul(size).ok_or(Status::Bounds)?;
    let end = addr.checked_add(bytes).ok_or(Status::Bounds)?;
    if end > memory_size::<0>() * 65536 {
        return Err(Status::Bounds);
    }
    Ok(())
}

/// Checks a workspace: `floats` floats at `addr` inside memory, 8-byte aligned (it starts
/// with f64 sums).
fn work_span(addr: usize, floats: usize, required: bool) -> Result<(), Status> {
    span(addr, floats, required)?;
    if addr % 8 != 0 {
        return Err(Status::Align);
    }
    Ok(())
}

/// Checks that every operand of `a` lies inside memory for `rows` rows of `dim`, as its
/// extent (`extents`, in operand order) says: a matrix of `es`-byte elements (of bytes for
/// the operand `bytes`, a quantized output), one f32 per row, or one row of f32; present where
/// bit `i` of `required` is set. So an operand is checked by its extent alone; the rules
/// between operands are the entry points'.
#[inline(always)]
fn operand_spans<const N: usize>(
    a: &[usize],
    extents: &[Extent; N],
    (rows, dim, es): (usize, usize, usize),
    bytes: Option<usize>,
    required: u32,
) -> Result<(), Status> {
    let n = matrix(rows, dim)?;
    for (i, e) in extents.iter().enumerate() {
        let req = required >> i & 1 != 0;
        match e {
            Extent::Matrix => span_of(a[i], n, if bytes == Some(i) { 1 } else { es }, req)?,
            Extent::PerRow => span(a[i], rows, req)?,
            Extent::Row => span(a[i], dim, req)?,
        }
    }
    Ok(())
}

/// The bit of operand `i` in a `required` mask.
const fn bit(i: u32, on: bool) -> u32 {
    (on as u32) << i
}

fn matrix(rows: usize, dim: usize) -> Result<usize, Status> {
    if dim == 0 {
        return Err(Status::Dim);
    }
    rows.checked_mul(dim).ok_or(Status::Bounds)
}

/// The code an entry point returns for `r`.
fn status(r: Result<(), Status>) -> u32 {
    r.err().unwrap_or(Status::Ok) as u32
}

/// Bytes per element of the activations' storage type in `dtypes`' low bits (not a quantized one).
fn elem_size(dtypes: u32) -> Result<usize, Status> {
    DTYPES
        .get((dtypes & DTYPE_MASK) as usize)
        .filter(|d| d.qmax == 0)
        .map(|d| d.bytes)
        .ok_or(Status::Dtype)
}

/// A forward's quantized output ([`Params`]'s `out_dtype`, `quant_scale`) without its
/// addresses, or None for an output stored as the activations are.
fn quant_of(p: &Params) -> Result<Option<Quant>, Status> {
    if p.out_dtype == 0 {
        return Ok(None);
    }
    let d = DTYPES.get(p.out_dtype as usize).ok_or(Status::Dtype)?;
    if d.qmax == 0 || !(p.quant_scale >= 0.0 && p.quant_scale.is_finite()) {
        return Err(Status::Dtype);
    }
    Ok(Some(Quant {
        out: core::ptr::null_mut(),
        scales: core::ptr::null_mut(),
        qmax: d.qmax as f32,
        scale: p.quant_scale,
        fp8: p.out_dtype == Dtype::Float8_e4m3 as u32,
    }))
}

/// A call's parameter block and address array, read from memory and checked: `stat` in the
/// row, a known storage type and gate.
struct Call<const N: usize> {
    p: Params,
    a: [usize; N],
    es: usize,
    gate: Gate,
}

impl<const N: usize> Call<N> {
    /// The kernel's scalars and flags of this call: its parameter block, read once.
    fn scalars(&self) -> Scalars {
        Scalars::of(&self.p, self.gate)
    }
}

/// Reads the block at `params` and the `N` addresses at `addrs`.
fn call<const N: usize>(params: usize, addrs: usize) -> Result<Call<N>, Status> {
    span(params, core::mem::size_of::<Params>() / 4, true)?;
    span(addrs, N, true)?;
    // SAFETY: both ranges were checked to lie inside memory, aligned to 4.
    let (p, raw) = unsafe {
        (
            core::ptr::read(params as *const Params),
            core::ptr::read(addrs as *const [u32; N]),
        )
    };
    let dim = p.dim as usize;
    matrix(1, dim)?;
    if p.stat == 0 || p.stat > p.dim {
        return Err(Status::Stat);
    }
    let gate = Gate::of(p.gate).ok_or(Status::Gate)?;
    Ok(Call {
        p,
        a: raw.map(|v| v as usize),
        es: elem_size(p.dtypes)?,
        gate,
    })
}

/// Allocates `len` floats (16-byte aligned) and returns their byte address, or 0 when the
/// memory cannot grow enough. May grow the memory: views into it must be re-created.
#[wasm_bindgen]
pub fn alloc_f32(len: usize) -> usize {
    match Layout::from_size_align(len.max(1).saturating_mul(4), 16) {
        // SAFETY: the layout has non-zero size.
        Ok(l) => unsafe { alloc(l) as usize },
        Err(_) => 0,
    }
}

/// Frees what [`alloc_f32`] returned for the same `len`.
#[wasm_bindgen]
pub fn free_f32(addr: usize, len: usize) {
    if addr != 0 {
        if let Ok(l) = Layout::from_size_align(len.max(1).saturating_mul(4), 16) {
            // SAFETY: `addr` came from `alloc_f32(len)` (the caller's contract).
            unsafe { dealloc(addr as *mut u8, l) }
        }
    }
}

/// Rows per dweight block: pool shards start on multiples of it.
#[wasm_bindgen]
pub fn dg_block_rows() -> usize {
    kernel::DG_BLOCK_ROWS
}

/// RMSNorm forward over rows `[row0, row1)` of matrices whose row 0 the address array gives
/// ([`ForwardOperand`] order): `y = h · rstd · (offset + w)` with `h = x`, or with a residual
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
    Backward::at(&c.a, c.scalars())
}

/// RMSNorm backward over rows `[row0, row0 + rows)` of a `total`-row matrix, single-threaded
/// (see `kernel::backward_span`; the addresses, [`BackwardOperand`] order, point at row
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
/// the addresses give, `row0` a multiple of [`dg_block_rows`]. With a weight, block partials
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
                dim,
                dw as *mut f32,
                accumulate != 0,
            )
        };
        Ok(())
    })())
}

mod convert;

#[cfg(feature = "bench-kernels")]
mod bench;
