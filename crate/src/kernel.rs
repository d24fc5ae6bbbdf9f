//! RMSNorm forward and backward (and a LayerNorm forward, to compare against) over row-major
//! `rows × dim` f32 matrices, written once against [`F32x4`].
//!
//! Shapes: `x`, `y`, `dy`, `dx` hold `rows * dim` floats; `g` (the gain) and `dg` hold `dim`;
//! `rstd` holds `rows`. A null `g` means "no gain" (g = 1) and is its own code path, not a
//! ones array. All pointers may be unaligned; outputs may alias an input of the same shape
//! exactly (`y == x`, `dx == dy`, `dx == x`), since each element is read before it is written.
//!
//! Numerics: the sum of squares takes one pass with 4 vector accumulators (16 partial sums, in
//! the order [`fold`] fixes for every reduction; rows longer than [`SUM_BLOCK`] in blocks of
//! it, added in f64), then `rstd = 1 / sqrt(ss / dim + eps)`. Rows where f32 cannot hold that
//! sum faithfully (it overflowed to inf, or it is so small that subnormal squares lost bits and
//! eps does not hide it) are redone in f64 by a slow path that only such rows pay. A NaN
//! stays in its row.

use crate::simd::F32x4;

/// Rows per dweight block. The weight gradient is summed in f32 over each block of this many
/// rows (in row order), and the block partials are then added in block order. Shards of the
/// worker pool start on block boundaries, so the result has the same bits whatever the number
/// of threads.
pub const DG_BLOCK_ROWS: usize = 32;

/// 2^-100: below this the sum of squares may be made of subnormal squares that lost bits.
const SS_TINY: f32 = f32::from_bits(27 << 23);
/// 2^-76: an eps at least this big swamps any error in a sum of squares below `SS_TINY`.
const EPS_TINY: f32 = f32::from_bits(51 << 23);
/// Backward's fast path needs `rstd³` to be a normal f32: rstd within [2^-40, 2^40].
const RSTD_LO: f32 = f32::from_bits(87 << 23);
const RSTD_HI: f32 = f32::from_bits(167 << 23);

/// Whether an f32 sum of squares is faithful enough for `1/sqrt(ss/d + eps)`.
#[inline(always)]
fn ss_is_fast(ss: f32, eps: f32) -> bool {
    ss.is_finite() && (ss >= SS_TINY || eps >= EPS_TINY)
}

/// The one summation order of every reduction here, on which the same-bits promise rests
/// (every build, every thread count, the host tests): for `i` in steps of 16, four vector
/// accumulators take `term(i)`, `term(i + 4)`, `term(i + 8)`, `term(i + 12)`; then one step of
/// 4 at a time into the first; the accumulators are combined as `(a0 + a1) + (a2 + a3)` and
/// summed across lanes ([`F32x4::hsum`]); then the last `n % 4` scalar terms `tail(i)` are
/// added in order. `K` sums are folded side by side in one pass (the backward needs two).
#[inline(always)]
unsafe fn fold<V: F32x4, const K: usize>(
    n: usize,
    term: impl Fn(usize) -> [V; K],
    tail: impl Fn(usize) -> [f32; K],
) -> [f32; K] {
    let mut a = [[V::zero(); 4]; K];
    let mut i = 0;
    while i + 16 <= n {
        let t = [term(i), term(i + 4), term(i + 8), term(i + 12)];
        for k in 0..K {
            for (j, tj) in t.iter().enumerate() {
                a[k][j] = a[k][j].add(tj[k]);
            }
        }
        i += 16;
    }
    while i + 4 <= n {
        let t = term(i);
        for k in 0..K {
            a[k][0] = a[k][0].add(t[k]);
        }
        i += 4;
    }
    let mut s = [0f32; K];
    for k in 0..K {
        s[k] = a[k][0].add(a[k][1]).add(a[k][2].add(a[k][3])).hsum();
    }
    while i < n {
        let t = tail(i);
        for k in 0..K {
            s[k] += t[k];
        }
        i += 1;
    }
    s
}

/// Floats per block of a row's sums. A row of up to this many is one [`fold`] (the bits it
/// always had); a longer row is folded block by block by [`fold_long`], so each of the 16 f32
/// partial sums adds at most 64 terms whatever the row's length. Over a whole row of 2^27
/// floats they added 2^23 terms each and rstd was off by up to 2.9e-3. The error grows with
/// the terms per partial sum: on the worst rows found (constant rows whose squares round the
/// same way at every addition) rstd is off by 2.6e-7 with blocks of 512, 5.0e-7 with 1024,
/// 1.9e-6 with 4096 and 3.8e-6 with 8192 (or one fold over 8192 floats, as rows up to 8192
/// were summed before): 1024 keeps 4× under the 2e-6 promised (test/long-rows.test.ts,
/// crate/tests/kernels.rs) at half the per-block cost of 512.
pub const SUM_BLOCK: usize = 1024;

/// [`fold`] for rows of any length: up to [`SUM_BLOCK`] exactly `fold`; beyond, `fold` over
/// each block of [`SUM_BLOCK`] floats, the blocks' sums added in f64 in order (the same bits on
/// every build: the order is fixed and f64 addition is IEEE everywhere).
#[inline(always)]
unsafe fn fold_long<V: F32x4, const K: usize>(
    n: usize,
    term: impl Fn(usize) -> [V; K],
    tail: impl Fn(usize) -> [f32; K],
) -> [f32; K] {
    if n <= SUM_BLOCK {
        return fold::<V, K>(n, term, tail);
    }
    let mut acc = [0f64; K];
    let mut b = 0;
    while b < n {
        let len = SUM_BLOCK.min(n - b);
        let part = fold::<V, K>(len, |i| term(b + i), |i| tail(b + i));
        for k in 0..K {
            acc[k] += part[k] as f64;
        }
        b += len;
    }
    acc.map(|a| a as f32)
}

/// Sum of `x[i]²` over `n` floats (blocked past [`SUM_BLOCK`]).
#[inline(always)]
unsafe fn sum_sq<V: F32x4>(x: *const f32, n: usize) -> f32 {
    let [s] = fold_long::<V, 1>(
        n,
        |i| {
            let v = V::load(x.add(i));
            [v.mul(v)]
        },
        |i| {
            let v = *x.add(i);
            [v * v]
        },
    );
    s
}

/// One pass over a row for the backward: `Σ gy·x` (gy = dy·g, or dy without gain) and, when
/// `with_ss` (a constant at every call site, so the unused sum is compiled away), `Σ x²` for a
/// recomputed rstd.
#[inline(always)]
unsafe fn dot_gy_x<V: F32x4, const W: bool>(
    dy: *const f32,
    g: *const f32,
    x: *const f32,
    n: usize,
    with_ss: bool,
) -> (f32, f32) {
    let [c, s] = fold_long::<V, 2>(
        n,
        |i| {
            let d = V::load(dy.add(i));
            let gy = if W { d.mul(V::load(g.add(i))) } else { d };
            let xv = V::load(x.add(i));
            [gy.mul(xv), if with_ss { xv.mul(xv) } else { V::zero() }]
        },
        |i| {
            let xv = *x.add(i);
            let gy = if W { *dy.add(i) * *g.add(i) } else { *dy.add(i) };
            [gy * xv, if with_ss { xv * xv } else { 0.0 }]
        },
    );
    (c, s)
}

/// `y = (x · r) · g` (or `x · r` without gain).
///
/// A second pass over the row, which is still in L1/L2 from the first. (Fusing the next
/// row's first pass into this loop, so that loads and stores overlap as in a copy, was tried
/// for forward and backward and measured no faster here: 47–52% of copy speed at 4096×4096
/// instead of 58–61% for the forward, within noise for the backward. Walking this pass
/// backwards, to meet first the lines the first pass read last, was slower still: 47–50%.)
#[inline(always)]
unsafe fn scale_row<V: F32x4, const W: bool>(
    x: *const f32,
    g: *const f32,
    y: *mut f32,
    n: usize,
    r: f32,
) {
    let rv = V::splat(r);
    let one = |i: usize| {
        let v = V::load(x.add(i)).mul(rv);
        if W {
            v.mul(V::load(g.add(i)))
        } else {
            v
        }
    };
    let mut i = 0;
    while i + 16 <= n {
        let (v0, v1, v2, v3) = (one(i), one(i + 4), one(i + 8), one(i + 12));
        v0.store(y.add(i));
        v1.store(y.add(i + 4));
        v2.store(y.add(i + 8));
        v3.store(y.add(i + 12));
        i += 16;
    }
    while i + 4 <= n {
        one(i).store(y.add(i));
        i += 4;
    }
    while i < n {
        let v = *x.add(i) * r;
        *y.add(i) = if W { v * *g.add(i) } else { v };
        i += 1;
    }
}

/// `acc[i] += src[i]` for `n` floats (lane-wise, so the same bits as a scalar loop).
#[inline(always)]
unsafe fn add_into<V: F32x4>(acc: *mut f32, src: *const f32, n: usize) {
    let mut i = 0;
    while i + 4 <= n {
        V::load(acc.add(i)).add(V::load(src.add(i))).store(acc.add(i));
        i += 4;
    }
    while i < n {
        *acc.add(i) += *src.add(i);
        i += 1;
    }
}

/// Forward of one row; returns its rstd.
#[inline(always)]
unsafe fn forward_row<V: F32x4, const W: bool>(
    x: *const f32,
    g: *const f32,
    y: *mut f32,
    n: usize,
    eps: f32,
) -> f32 {
    let ss = sum_sq::<V>(x, n);
    if !ss_is_fast(ss, eps) {
        return forward_row_f64::<W>(x, g, y, n, eps);
    }
    let r = 1.0 / (ss / n as f32 + eps).sqrt();
    scale_row::<V, W>(x, g, y, n, r);
    r
}

/// The forward of a row whose sum of squares f32 cannot hold: all in f64. The returned rstd
/// is rounded to f32 and saturates to inf for rows whose rms is below f32's range.
#[cold]
#[inline(never)]
unsafe fn forward_row_f64<const W: bool>(
    x: *const f32,
    g: *const f32,
    y: *mut f32,
    n: usize,
    eps: f32,
) -> f32 {
    let mut ss = 0f64;
    for i in 0..n {
        let v = *x.add(i) as f64;
        ss += v * v;
    }
    let r = 1.0 / (ss / n as f64 + eps as f64).sqrt();
    for i in 0..n {
        let v = *x.add(i) as f64 * r;
        *y.add(i) = if W { v * *g.add(i) as f64 } else { v } as f32;
    }
    r as f32
}

/// RMSNorm forward over `rows` rows of `dim`: `y = x · rstd · g`.
///
/// `g` may be null (no gain); `rstd_out` may be null (not written), else it receives one rstd
/// per row. `y` may equal `x`.
///
/// # Safety
/// Every non-null pointer must be valid for its shape (see the module docs).
pub unsafe fn forward<V: F32x4>(
    x: *const f32,
    g: *const f32,
    y: *mut f32,
    rstd_out: *mut f32,
    rows: usize,
    dim: usize,
    eps: f32,
) {
    for r in 0..rows {
        let off = r * dim;
        let rs = if g.is_null() {
            forward_row::<V, false>(x.add(off), g, y.add(off), dim, eps)
        } else {
            forward_row::<V, true>(x.add(off), g, y.add(off), dim, eps)
        };
        if !rstd_out.is_null() {
            *rstd_out.add(r) = rs;
        }
    }
}

/// Pointers and sizes of one backward call, shared by the sync path and the pool's shards.
#[derive(Clone, Copy, Debug)]
pub struct Backward {
    /// Upstream gradient, `rows × dim`.
    pub dy: *const f32,
    /// Forward input, `rows × dim`.
    pub x: *const f32,
    /// Gain, `dim`; null for none (then no weight gradient is formed).
    pub g: *const f32,
    /// Saved rstd from the forward, `rows`; null to recompute it from `x` and `eps`.
    pub rstd: *const f32,
    /// Destination of the input gradient, `rows × dim`; may equal `dy` or `x`.
    pub dx: *mut f32,
    /// Row length.
    pub dim: usize,
    /// Added inside the square root when rstd is recomputed.
    pub eps: f32,
}

/// Backward of one row; with a gain, adds `dy · x · rstd` into the block partial `p`.
#[inline(always)]
unsafe fn backward_row<V: F32x4, const W: bool, const R: bool>(
    k: &Backward,
    row: usize,
    p: *mut f32,
) {
    let n = k.dim;
    let off = row * n;
    let (dy, x, dx, g) = (k.dy.add(off), k.x.add(off), k.dx.add(off), k.g);
    let (c, ss) = dot_gy_x::<V, W>(dy, g, x, n, !R);
    let rstd = if R {
        *k.rstd.add(row)
    } else if ss_is_fast(ss, k.eps) {
        1.0 / (ss / n as f32 + k.eps).sqrt()
    } else {
        f32::NAN // sends the row to the f64 path below
    };
    // dx = rstd·gy − x·(rstd³·mean(gy·x)) = a·gy − b·x
    let a = rstd;
    let b = (c / n as f32) * rstd * (rstd * rstd);
    if !(rstd >= RSTD_LO && rstd <= RSTD_HI && c.is_finite() && b.is_finite()) {
        return backward_row_f64::<W, R>(k, row, p);
    }
    let (av, bv) = (V::splat(a), V::splat(b));
    let one = |i: usize| {
        let d = V::load(dy.add(i));
        let xv = V::load(x.add(i));
        let gy = if W { d.mul(V::load(g.add(i))) } else { d };
        if W {
            let pv = V::load(p.add(i));
            pv.add(d.mul(xv.mul(av))).store(p.add(i));
        }
        av.mul(gy).sub(bv.mul(xv))
    };
    let mut i = 0;
    while i + 8 <= n {
        let (v0, v1) = (one(i), one(i + 4));
        v0.store(dx.add(i));
        v1.store(dx.add(i + 4));
        i += 8;
    }
    while i + 4 <= n {
        one(i).store(dx.add(i));
        i += 4;
    }
    while i < n {
        let (d, xv) = (*dy.add(i), *x.add(i));
        let gy = if W { d * *g.add(i) } else { d };
        if W {
            *p.add(i) += d * (xv * a);
        }
        *dx.add(i) = a * gy - b * xv;
        i += 1;
    }
}

/// The backward of a row f32 cannot do faithfully (rms outside about [1e-12, 1e12], overflow
/// in `Σ gy·x`, or a NaN/Inf): all in f64, each result rounded once to f32.
#[cold]
#[inline(never)]
unsafe fn backward_row_f64<const W: bool, const R: bool>(k: &Backward, row: usize, p: *mut f32) {
    let n = k.dim;
    let off = row * n;
    let (dy, x, dx, g) = (k.dy.add(off), k.x.add(off), k.dx.add(off), k.g);
    let gy = |i: usize| {
        let d = *dy.add(i) as f64;
        if W {
            d * *g.add(i) as f64
        } else {
            d
        }
    };
    let (mut c, mut ss) = (0f64, 0f64);
    for i in 0..n {
        let xv = *x.add(i) as f64;
        c += gy(i) * xv;
        ss += xv * xv;
    }
    let rstd = if R {
        *k.rstd.add(row) as f64
    } else {
        1.0 / (ss / n as f64 + k.eps as f64).sqrt()
    };
    let b = rstd * rstd * rstd * (c / n as f64);
    for i in 0..n {
        let xv = *x.add(i) as f64;
        let gyv = gy(i);
        if W {
            *p.add(i) += (*dy.add(i) as f64 * xv * rstd) as f32;
        }
        *dx.add(i) = (rstd * gyv - b * xv) as f32;
    }
}

/// Rows `[start, end)` (within one dweight block) into the zeroed partial `p` (`dim` floats).
#[inline(always)]
unsafe fn backward_block<V: F32x4, const W: bool, const R: bool>(
    k: &Backward,
    start: usize,
    end: usize,
    p: *mut f32,
) {
    if W {
        core::ptr::write_bytes(p, 0, k.dim);
    }
    for row in start..end {
        backward_row::<V, W, R>(k, row, p);
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

macro_rules! with_flags {
    ($k:expr, $f:ident::<$V:ty>($($arg:expr),*)) => {
        match ($k.g.is_null(), $k.rstd.is_null()) {
            (true, true) => $f::<$V, false, false>($($arg),*),
            (true, false) => $f::<$V, false, true>($($arg),*),
            (false, true) => $f::<$V, true, false>($($arg),*),
            (false, false) => $f::<$V, true, true>($($arg),*),
        }
    };
}

/// RMSNorm backward over all `rows`, single-threaded: [`backward_span`] over the whole matrix.
///
/// # Safety
/// As [`backward_span`] with `row0 = 0`, `total = rows`.
pub unsafe fn backward<V: F32x4>(k: &Backward, rows: usize, dg: *mut f32, work: *mut f32) {
    backward_span::<V>(k, 0, rows, rows, dg, work)
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
pub unsafe fn backward_span<V: F32x4>(
    k: &Backward,
    row0: usize,
    rows: usize,
    total: usize,
    dg: *mut f32,
    work: *mut f32,
) {
    unsafe fn go<V: F32x4, const W: bool, const R: bool>(
        k: &Backward,
        row0: usize,
        rows: usize,
        total: usize,
        dg: *mut f32,
        work: *mut f32,
    ) {
        if W && row0 == 0 {
            core::ptr::write_bytes(dg, 0, k.dim);
        }
        for_each_block(row0, row0 + rows, |s, e, _| {
            if W && s % DG_BLOCK_ROWS == 0 {
                core::ptr::write_bytes(work, 0, k.dim);
            }
            for row in s..e {
                backward_row::<V, W, R>(k, row - row0, work);
            }
            if W && (e % DG_BLOCK_ROWS == 0 || e == total) {
                add_into::<V>(dg, work, k.dim);
            }
        });
    }
    with_flags!(k, go::<V>(k, row0, rows, total, dg, work))
}

/// RMSNorm backward over rows `[row0, row1)` for one shard of the worker pool.
///
/// `row0` must be a multiple of [`DG_BLOCK_ROWS`]. With a gain, the partial of block `b` goes
/// to `partials[b·dim .. (b+1)·dim]` (`partials` is the base for the whole matrix).
///
/// # Safety
/// As [`backward`]; `partials` valid for every block the range touches.
pub unsafe fn backward_rows<V: F32x4>(k: &Backward, row0: usize, row1: usize, partials: *mut f32) {
    unsafe fn go<V: F32x4, const W: bool, const R: bool>(
        k: &Backward,
        row0: usize,
        row1: usize,
        partials: *mut f32,
    ) {
        for_each_block(row0, row1, |s, e, b| {
            let p = if W { partials.add(b * k.dim) } else { partials };
            backward_block::<V, W, R>(k, s, e, p);
        });
    }
    with_flags!(k, go::<V>(k, row0, row1, partials))
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

/// LayerNorm forward, for the RMSNorm-vs-LayerNorm comparison: per row a mean pass, a
/// variance pass, then `y = (x − mean) · rstd · g + b`. `g` and `b` may be null.
///
/// # Safety
/// Every non-null pointer must be valid for its shape.
pub unsafe fn layer_norm_forward<V: F32x4>(
    x: *const f32,
    g: *const f32,
    bias: *const f32,
    y: *mut f32,
    rows: usize,
    dim: usize,
    eps: f32,
) {
    let n = dim;
    for r in 0..rows {
        let (x, y) = (x.add(r * n), y.add(r * n));
        // pass 1: mean
        let [s] = fold::<V, 1>(n, |i| [V::load(x.add(i))], |i| [*x.add(i)]);
        let mean = s / n as f32;
        // pass 2: variance around the mean (two-pass, as LayerNorm implementations do)
        let m = V::splat(mean);
        let [s] = fold::<V, 1>(
            n,
            |i| {
                let v = V::load(x.add(i)).sub(m);
                [v.mul(v)]
            },
            |i| {
                let v = *x.add(i) - mean;
                [v * v]
            },
        );
        let rstd = 1.0 / (s / n as f32 + eps).sqrt();
        // pass 3: normalize, scale, shift
        let rv = V::splat(rstd);
        let mut i = 0;
        while i + 4 <= n {
            let mut v = V::load(x.add(i)).sub(m).mul(rv);
            if !g.is_null() {
                v = v.mul(V::load(g.add(i)));
            }
            if !bias.is_null() {
                v = v.add(V::load(bias.add(i)));
            }
            v.store(y.add(i));
            i += 4;
        }
        while i < n {
            let mut v = (*x.add(i) - mean) * rstd;
            if !g.is_null() {
                v *= *g.add(i);
            }
            if !bias.is_null() {
                v += *bias.add(i);
            }
            *y.add(i) = v;
            i += 1;
        }
    }
}

/// Copies `n` floats with vector loads and stores: the memory-bandwidth roof a wasm kernel
/// that reads `n` and writes `n` floats can reach (wasm has no non-temporal stores).
///
/// # Safety
/// `src` readable and `dst` writable for `n` floats; they must not overlap.
pub unsafe fn copy<V: F32x4>(src: *const f32, dst: *mut f32, n: usize) {
    let mut i = 0;
    while i + 16 <= n {
        let (v0, v1) = (V::load(src.add(i)), V::load(src.add(i + 4)));
        let (v2, v3) = (V::load(src.add(i + 8)), V::load(src.add(i + 12)));
        v0.store(dst.add(i));
        v1.store(dst.add(i + 4));
        v2.store(dst.add(i + 8));
        v3.store(dst.add(i + 12));
        i += 16;
    }
    while i < n {
        *dst.add(i) = *src.add(i);
        i += 1;
    }
}
