//! The backward over many rows: the weight gradient summed in f32 per block of
//! [`DG_BLOCK_ROWS`] rows, the block sums added in f64 in block order and rounded once, so
//! that any cut into spans or pool shards gives the same bits.
//!
//! The workspace (`work`) starts with the f64 sum of the finished blocks (`dim` f64, so 2·dim
//! floats: `ACC_FLOATS` per column), then holds the open block (a span: `dim` floats) or the
//! block partials (a pool job: one row of `dim` floats per block).

use super::args::Backward;
use super::backward::plain_rows;
use super::elems::{Buffer, Gain, NoMemory, Row};
use super::gate;
use super::scalars::Scalars;
use crate::abi::Gate;
use crate::elem::Elem;
use crate::simd::F32x4;

/// Rows per dweight block. The weight gradient is summed in f32 over each block of this many
/// rows (in row order), and the block partials are then added in block order. Shards of the
/// worker pool start on block boundaries, so the result has the same bits whatever the number
/// of threads.
pub const DG_BLOCK_ROWS: usize = 32;

/// Floats per column of the workspace's f64 sum of finished blocks (`abi::DG_SUM_FLOATS`).
/// (Adding the blocks in f32 left `dweight` of an 8192 × 4096 backward 2–4× less accurate
/// than PyTorch's CPU kernel, worst 1.5e-4 against float64; in f64 the blocks' own f32 sums
/// are all the error.)
const ACC_FLOATS: usize = crate::abi::DG_SUM_FLOATS as usize;

/// The f64 sum at the start of the workspace `work`.
#[inline(always)]
fn acc_of(work: *mut f32) -> *mut f64 {
    work as *mut f64
}

/// `acc[i] += p[i]` in f64 over `n` columns.
#[inline(always)]
unsafe fn add_f64(acc: *mut f64, p: *const f32, n: usize) {
    for i in 0..n {
        *acc.add(i) += *p.add(i) as f64;
    }
}

/// `dg[i] = acc[i]` rounded to f32.
#[inline(always)]
unsafe fn round_into(dg: *mut f32, acc: *const f64, n: usize) {
    for i in 0..n {
        *dg.add(i) = *acc.add(i) as f32;
    }
}

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

/// What a backward call's rows read besides its operands: the gain row, and a float16
/// call's rows of widened scratch (x, dy, dh).
struct Scratch {
    gain: Gain,
    _wide: Option<[Row; 3]>,
    wide: [*mut f32; 3],
}

impl Scratch {
    unsafe fn new<A: Elem>(k: &Backward<A>, bufs: &mut [Buffer; 4]) -> Result<Scratch, NoMemory> {
        let [gb, xb, db, hb] = bufs;
        let n = k.s.dim;
        let gain = Gain::new(k.g, &k.s, n, gb)?;
        if !A::WIDEN_ONCE || k.s.gate != Gate::None {
            return Ok(Scratch {
                gain,
                _wide: None,
                wide: [core::ptr::null_mut(); 3],
            });
        }
        let rows = [
            Row::new(n, xb)?,
            Row::new(n, db)?,
            Row::new(if k.dh.is_null() { 0 } else { n }, hb)?,
        ];
        let wide = [rows[0].ptr(), rows[1].ptr(), rows[2].ptr()];
        Ok(Scratch {
            gain,
            _wide: Some(rows),
            wide,
        })
    }

    /// Rows `[s, e)` of `k` (row indices relative to `k`'s pointers), adding their dweight
    /// terms into `p` (with a gain): the gated backward's rows, or the plain ones.
    #[inline(always)]
    unsafe fn rows<V: F32x4, A: Elem>(&self, k: &Backward<A>, s: usize, e: usize, p: *mut f32) {
        if k.s.gate != Gate::None {
            return gate::backward_rows::<V, A>(k, s, e, p);
        }
        plain_rows::<V, A>(k, self.gain.ptr(), self.wide, s, e, p);
    }
}

/// Four stack buffers of scratch rows, uninitialized.
fn buffers() -> [Buffer; 4] {
    [
        Buffer::uninit(),
        Buffer::uninit(),
        Buffer::uninit(),
        Buffer::uninit(),
    ]
}

/// RMSNorm backward over all `rows`, single-threaded: [`backward_span`] over the whole matrix.
///
/// # Safety
/// As [`backward_span`] with `row0 = 0`, `total = rows`. Err as there.
pub unsafe fn backward<V: F32x4, A: Elem>(
    k: &Backward<A>,
    rows: usize,
    dg: *mut f32,
    work: *mut f32,
) -> Result<(), NoMemory> {
    backward_span::<V, A>(k, 0, rows, rows, dg, work)
}

/// RMSNorm backward over rows `[row0, row0 + rows)` of a `total`-row matrix, single-threaded;
/// `k`'s pointers address row `row0` (so a caller can stream the matrix through a window,
/// one span after another, in row order).
///
/// Writes `dx`; with a gain also `dg` (`dim` floats): the gradient is summed in f32 per block
/// of [`DG_BLOCK_ROWS`] rows (block `b` = rows `[32b, 32b + 32)` of the whole matrix) in the
/// workspace, each finished block is added in f64 to the workspace's sum (zeroed when `row0 ==
/// 0`), and the span that reaches `total` rounds that sum into `dg`. Spans may end mid-block:
/// `work` (`(ACC_FLOATS + 1) × dim` floats) carries the sum and the open block to the next span
/// (keep it). So any cut into spans gives the bits of one call over all rows — and of
/// [`backward_rows`] followed by [`reduce_partials`]. Err (nothing written) only when a row
/// too long for the stack's scratch (its gain, or a float16 row widened) cannot be allocated.
///
/// # Safety
/// Every non-null pointer must be valid for its shape (`rows` rows); `dg` and `work` too when
/// `k.g` is set, `work` 8-byte aligned; `row0 + rows <= total`.
pub unsafe fn backward_span<V: F32x4, A: Elem>(
    k: &Backward<A>,
    row0: usize,
    rows: usize,
    total: usize,
    dg: *mut f32,
    work: *mut f32,
) -> Result<(), NoMemory> {
    let mut bufs = buffers();
    let scratch = Scratch::new(k, &mut bufs)?;
    let w = !k.g.is_null();
    let (acc, open) = (acc_of(work), work.add(ACC_FLOATS * k.s.dim));
    if w && row0 == 0 {
        core::ptr::write_bytes(acc, 0, k.s.dim);
    }
    for_each_block(row0, row0 + rows, |s, e, _| {
        if w && s % DG_BLOCK_ROWS == 0 {
            core::ptr::write_bytes(open, 0, k.s.dim);
        }
        scratch.rows::<V, A>(k, s - row0, e - row0, open);
        if w && (e % DG_BLOCK_ROWS == 0 || e == total) {
            add_f64(acc, open, k.s.dim);
        }
    });
    if w && row0 + rows == total {
        round_into(dg, acc, k.s.dim);
    }
    Ok(())
}

/// RMSNorm backward over rows `[row0, row1)` for one shard of the worker pool.
///
/// `row0` must be a multiple of [`DG_BLOCK_ROWS`]. With a gain, the partial of block `b` goes
/// to row `b` of the partials after the workspace's sum (`work` is the base for the whole
/// matrix: [`pool_work_floats`]).
///
/// # Safety
/// As [`backward`]; `work` valid for every block the range touches.
pub unsafe fn backward_rows<V: F32x4, A: Elem>(
    k: &Backward<A>,
    row0: usize,
    row1: usize,
    work: *mut f32,
) -> Result<(), NoMemory> {
    let mut bufs = buffers();
    let scratch = Scratch::new(k, &mut bufs)?;
    let w = !k.g.is_null();
    let partials = work.add(ACC_FLOATS * k.s.dim);
    for_each_block(row0, row1, |s, e, b| {
        let p = if w {
            partials.add(b * k.s.dim)
        } else {
            partials
        };
        if w {
            core::ptr::write_bytes(p, 0, k.s.dim);
        }
        scratch.rows::<V, A>(k, s, e, p);
    });
    Ok(())
}

/// `dg = Σ_b partial_b`, the pool job's block partials (after the workspace's sum, see
/// [`backward_rows`]) added in f64 in block order onto zero — or with `accumulate` onto the
/// workspace's sum as the previous job left it (the pool's later segments of one matrix
/// continue the same sum, so the bits equal one reduction over all blocks) — then rounded into
/// `dg`.
///
/// # Safety
/// `work` holds [`pool_work_floats`]`(nblocks, s.dim)` floats, 8-byte aligned; `dg` holds
/// `s.dim`. `s`: the call's scalars, as the rows' kernels had them.
pub unsafe fn reduce_partials(
    work: *mut f32,
    nblocks: usize,
    s: &Scalars,
    dg: *mut f32,
    accumulate: bool,
) {
    let dim = s.dim;
    let acc = acc_of(work);
    if !accumulate {
        core::ptr::write_bytes(acc, 0, dim);
    }
    let partials = work.add(ACC_FLOATS * dim);
    for b in 0..nblocks {
        add_f64(acc, partials.add(b * dim), dim);
    }
    round_into(dg, acc, dim);
}

/// Floats of workspace a single-threaded backward with a gain needs: the f64 sum and the open block.
pub fn span_work_floats(dim: usize) -> usize {
    (ACC_FLOATS + 1) * dim
}

/// Floats of workspace a pool job of `nblocks` dweight blocks needs: the f64 sum and the partials.
pub fn pool_work_floats(nblocks: usize, dim: usize) -> usize {
    (ACC_FLOATS + nblocks) * dim
}

/// Number of dweight blocks for `rows` rows.
pub fn dg_blocks(rows: usize) -> usize {
    rows.div_ceil(DG_BLOCK_ROWS)
}
