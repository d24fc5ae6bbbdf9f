//! The backward over many rows: the weight gradient summed per block of [`DG_BLOCK_ROWS`]
//! rows and the blocks added in order, so that any cut into spans or pool shards gives the
//! same bits.

use super::backward::{backward_row, Backward};
use super::gate;
use super::reduce::add_into;
use crate::abi::Gate;
use crate::elem::Elem;
use crate::simd::F32x4;

/// Rows per dweight block. The weight gradient is summed in f32 over each block of this many
/// rows (in row order), and the block partials are then added in block order. Shards of the
/// worker pool start on block boundaries, so the result has the same bits whatever the number
/// of threads.
pub const DG_BLOCK_ROWS: usize = 32;

/// Calls `f(block_start, block_end, block_index)` for each dweight block that meets
/// `[row0, row1)`, clipped to it.
#[inline(always)]
fn for_each_block(row0: usize, row1: usize, mut f: impl FnMut(usize, usize, usize)) {
    let mut r = row0;
    while r < row1 {
        let b = r / DG_BLOCK_ROWS;
        let end = ((b + 1) * DG_BLOCK_ROWS).min(row1);
        f(r, end, b);
        r = end;
    }
}

/// Rows `[s, e)` of `k` (row indices relative to `k`'s pointers), adding their dweight terms
/// into `p` (with a gain). One function per flavour, never inlined into its callers: inlined,
/// the flavours made functions so large that the engine compiled the backward 10-20% slower;
/// reached through a pointer ([`rows_fn`]) once per block, so both entry points share it.
type RowsFn<A> = unsafe fn(&Backward<A>, usize, usize, *mut f32);

#[inline(never)]
unsafe fn rows_go<
    V: F32x4,
    A: Elem,
    const W: bool,
    const R: bool,
    const O: bool,
    const D: bool,
    const L: bool,
>(
    k: &Backward<A>,
    s: usize,
    e: usize,
    p: *mut f32,
) {
    for row in s..e {
        backward_row::<V, A, W, R, O, D, L>(k, row, p);
    }
}

/// The [`rows_go`] flavour for `k`: gain, saved rstd, offset (only with a gain), residual
/// gradient, llama (only for a half type with a gain); or the gated backward's rows.
fn rows_fn<V: F32x4, A: Elem>(k: &Backward<A>) -> RowsFn<A> {
    if k.s.gate != Gate::None {
        return gate::backward_rows::<V, A>;
    }
    let w = !k.g.is_null();
    let o = w && k.s.offset != 0.0;
    let l = w && k.s.llama && A::HALF;
    let (r, d) = (!k.rstd.is_null(), !k.dh.is_null());
    macro_rules! pick {
        ($($w:literal $r:literal $o:literal $d:literal $l:literal),*) => {
            match (w, r, o, d, l) {
                $(($w, $r, $o, $d, $l) => rows_go::<V, A, $w, $r, $o, $d, $l>,)*
                _ => unreachable!("o and l are false without a gain"),
            }
        };
    }
    pick!(
        false false false false false, false false false true false,
        false true false false false, false true false true false,
        true false false false false, true false false true false,
        true true false false false, true true false true false,
        true false true false false, true false true true false,
        true true true false false, true true true true false,
        true false false false true, true false false true true,
        true true false false true, true true false true true,
        true false true false true, true false true true true,
        true true true false true, true true true true true
    )
}

/// RMSNorm backward over all `rows`, single-threaded: [`backward_span`] over the whole matrix.
///
/// # Safety
/// As [`backward_span`] with `row0 = 0`, `total = rows`.
pub unsafe fn backward<V: F32x4, A: Elem>(
    k: &Backward<A>,
    rows: usize,
    dg: *mut f32,
    work: *mut f32,
) {
    backward_span::<V, A>(k, 0, rows, rows, dg, work)
}

/// RMSNorm backward over rows `[row0, row0 + rows)` of a `total`-row matrix, single-threaded;
/// `k`'s pointers address row `row0` (so a caller can stream the matrix through a window,
/// one span after another, in row order).
///
/// Writes `dx`; with a gain also `dg` (`dim` floats): the gradient is summed in f32 per block
/// of [`DG_BLOCK_ROWS`] rows (block `b` = rows `[32b, 32b + 32)` of the whole matrix) into
/// `work` (`dim` floats), and each finished block is added into `dg` in order; `dg` is zeroed
/// when `row0 == 0`. Spans may end mid-block: `work` carries the open block to the next span
/// (keep it). So any cut into spans gives the bits of one call over all rows — and of
/// [`backward_rows`] followed by [`reduce_partials`].
///
/// # Safety
/// Every non-null pointer must be valid for its shape (`rows` rows); `dg` and `work` too when
/// `k.g` is set; `row0 + rows <= total`.
pub unsafe fn backward_span<V: F32x4, A: Elem>(
    k: &Backward<A>,
    row0: usize,
    rows: usize,
    total: usize,
    dg: *mut f32,
    work: *mut f32,
) {
    let go = rows_fn::<V, A>(k);
    let w = !k.g.is_null();
    if w && row0 == 0 {
        core::ptr::write_bytes(dg, 0, k.s.dim);
    }
    for_each_block(row0, row0 + rows, |s, e, _| {
        if w && s % DG_BLOCK_ROWS == 0 {
            core::ptr::write_bytes(work, 0, k.s.dim);
        }
        go(k, s - row0, e - row0, work);
        if w && (e % DG_BLOCK_ROWS == 0 || e == total) {
            add_into::<V>(dg, work, k.s.dim);
        }
    });
}

/// RMSNorm backward over rows `[row0, row1)` for one shard of the worker pool.
///
/// `row0` must be a multiple of [`DG_BLOCK_ROWS`]. With a gain, the partial of block `b` goes
/// to `partials[b·dim .. (b+1)·dim]` (`partials` is the base for the whole matrix).
///
/// # Safety
/// As [`backward`]; `partials` valid for every block the range touches.
pub unsafe fn backward_rows<V: F32x4, A: Elem>(
    k: &Backward<A>,
    row0: usize,
    row1: usize,
    partials: *mut f32,
) {
    let go = rows_fn::<V, A>(k);
    let w = !k.g.is_null();
    for_each_block(row0, row1, |s, e, b| {
        let p = if w {
            partials.add(b * k.s.dim)
        } else {
            partials
        };
        if w {
            core::ptr::write_bytes(p, 0, k.s.dim);
        }
        go(k, s, e, p);
    });
}

/// `dg = Σ_b partials[b·dim ..]`, the blocks added in order — onto zero, or with `accumulate`
/// onto `dg` as it is (the pool's later segments of one matrix continue the same sum, so the
/// bits equal one reduction over all blocks).
///
/// # Safety
/// `partials` holds `nblocks × dim` floats, `dg` holds `dim`.
pub unsafe fn reduce_partials<V: F32x4>(
    partials: *const f32,
    nblocks: usize,
    dim: usize,
    dg: *mut f32,
    accumulate: bool,
) {
    if !accumulate {
        core::ptr::write_bytes(dg, 0, dim);
    }
    for b in 0..nblocks {
        add_into::<V>(dg, partials.add(b * dim), dim);
    }
}

/// Number of dweight blocks for `rows` rows.
pub fn dg_blocks(rows: usize) -> usize {
    rows.div_ceil(DG_BLOCK_ROWS)
}
