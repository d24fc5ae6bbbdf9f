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

use crate::half::Elem;
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
/// `term8(i)` gives `[term(i), term(i + 4)]` (one wider load of half-precision data).
#[inline(always)]
unsafe fn fold<V: F32x4, const K: usize>(
    n: usize,
    term8: impl Fn(usize) -> [[V; K]; 2],
    term: impl Fn(usize) -> [V; K],
    tail: impl Fn(usize) -> [f32; K],
) -> [f32; K] {
    let mut a = [[V::zero(); 4]; K];
    let mut i = 0;
    while i + 16 <= n {
        let ([t0, t1], [t2, t3]) = (term8(i), term8(i + 8));
        let t = [t0, t1, t2, t3];
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
    term8: impl Fn(usize) -> [[V; K]; 2],
    term: impl Fn(usize) -> [V; K],
    tail: impl Fn(usize) -> [f32; K],
) -> [f32; K] {
    // A row of at most one block is one `fold` too: its sum goes to f64 and back exactly, so
    // it keeps the bits it always had — and `fold` is inlined once here, not twice.
    let mut acc = [0f64; K];
    let mut b = 0;
    while b < n {
        let len = SUM_BLOCK.min(n - b);
        let part = fold::<V, K>(len, |i| term8(b + i), |i| term(b + i), |i| tail(b + i));
        for k in 0..K {
            acc[k] += part[k] as f64;
        }
        b += len;
    }
    acc.map(|a| a as f32)
}

/// Sum of `x[i]²` over `n` elements (blocked past [`SUM_BLOCK`]).
#[inline(always)]
unsafe fn sum_sq<V: F32x4, A: Elem>(x: *const A, n: usize) -> f32 {
    let [s] = fold_long::<V, 1>(
        n,
        |i| A::load8::<V>(x.add(i)).map(|v| [v.mul(v)]),
        |i| {
            let v = A::load::<V>(x.add(i));
            [v.mul(v)]
        },
        |i| {
            let v = A::get(x.add(i));
            [v * v]
        },
    );
    s
}

/// One pass over a row for the backward: `Σ gy·x` (gy = dy·(offset + g), dy·g, or dy without
/// gain; with `L`, gy rounded to the activations' type) and, when `with_ss` (a constant at
/// every call site, so the unused sum is compiled away), `Σ x²` for a recomputed rstd.
#[inline(always)]
unsafe fn dot_gy_x<V: F32x4, A: Elem, const W: bool, const O: bool, const L: bool>(
    dy: *const A,
    g: *const f32,
    offset: f32,
    x: *const A,
    n: usize,
    with_ss: bool,
) -> (f32, f32) {
    let ov = V::splat(offset);
    let terms = |gy: V, xv: V| [gy.mul(xv), if with_ss { xv.mul(xv) } else { V::zero() }];
    let [c, s] = fold_long::<V, 2>(
        n,
        |i| {
            let [d0, d1] = A::load8::<V>(dy.add(i));
            let [x0, x1] = A::load8::<V>(x.add(i));
            [
                terms(gy_from::<V, A, W, O, L>(d0, g, ov, i), x0),
                terms(gy_from::<V, A, W, O, L>(d1, g, ov, i + 4), x1),
            ]
        },
        |i| terms(gy_of::<V, A, W, O, L>(dy, g, ov, i), A::load::<V>(x.add(i))),
        |i| {
            let xv = A::get(x.add(i));
            let gy = gy1_of::<A, W, O, L>(dy, g, offset, i);
            [gy * xv, if with_ss { xv * xv } else { 0.0 }]
        },
    );
    (c, s)
}

/// `gy = dy·gain` of lanes `i..i+4` (dy without a gain). With `L` (the `llama` casting mode)
/// rounded to the activations' type, as autograd rounds the gradient of `weight · y_half`.
#[inline(always)]
unsafe fn gy_of<V: F32x4, A: Elem, const W: bool, const O: bool, const L: bool>(
    dy: *const A,
    g: *const f32,
    ov: V,
    i: usize,
) -> V {
    gy_from::<V, A, W, O, L>(A::load::<V>(dy.add(i)), g, ov, i)
}

/// [`gy_of`] of `d`, the already loaded dy of lanes `i..i+4`.
#[inline(always)]
unsafe fn gy_from<V: F32x4, A: Elem, const W: bool, const O: bool, const L: bool>(
    d: V,
    g: *const f32,
    ov: V,
    i: usize,
) -> V {
    if !W {
        d
    } else if L {
        A::round(d.mul(gain::<V, O>(g, ov, i)))
    } else {
        d.mul(gain::<V, O>(g, ov, i))
    }
}

/// `gy` of element `i`, as [`gy_of`].
#[inline(always)]
unsafe fn gy1_of<A: Elem, const W: bool, const O: bool, const L: bool>(
    dy: *const A,
    g: *const f32,
    offset: f32,
    i: usize,
) -> f32 {
    let d = A::get(dy.add(i));
    if !W {
        d
    } else if L {
        A::round1(d * gain1::<O>(g, offset, i))
    } else {
        d * gain1::<O>(g, offset, i)
    }
}

/// The gain of lanes `i..i+4`: `offset + g` with an offset (Gemma's `1 + weight`), else `g`
/// (no addition, so the bits of a plain call do not depend on the offset's existence).
#[inline(always)]
unsafe fn gain<V: F32x4, const O: bool>(g: *const f32, ov: V, i: usize) -> V {
    let w = V::load(g.add(i));
    if O {
        ov.add(w)
    } else {
        w
    }
}

/// The gain of element `i`, as [`gain`].
#[inline(always)]
unsafe fn gain1<const O: bool>(g: *const f32, offset: f32, i: usize) -> f32 {
    if O {
        offset + *g.add(i)
    } else {
        *g.add(i)
    }
}

/// `h = x + res` over `n` elements (lane-wise; `h` may equal `x` or `res`).
#[inline(always)]
unsafe fn add_rows<V: F32x4, A: Elem>(x: *const A, res: *const A, h: *mut A, n: usize) {
    let mut i = 0;
    while i + 4 <= n {
        A::store::<V>(h.add(i), A::load::<V>(x.add(i)).add(A::load::<V>(res.add(i))));
        i += 4;
    }
    while i < n {
        A::put(h.add(i), A::get(x.add(i)) + A::get(res.add(i)));
        i += 1;
    }
}

/// The fused residual add's first pass: `h = x + res` over the row's `n` elements, and the
/// sum of `h²` over its first `stat` (in [`fold_long`]'s order, so with `stat = n` the same
/// bits as [`sum_sq`] of a precomputed `h`: the squares are of `h` as stored, rounded to a
/// half type when the activations are one). One read of `x` and `res`, one write of `h`.
#[inline(always)]
unsafe fn add_sum_sq<V: F32x4, A: Elem>(
    x: *const A,
    res: *const A,
    h: *mut A,
    n: usize,
    stat: usize,
) -> f32 {
    let term = |i: usize| {
        let v = A::round(A::load::<V>(x.add(i)).add(A::load::<V>(res.add(i))));
        A::store::<V>(h.add(i), v);
        [v.mul(v)]
    };
    let [s] = fold_long::<V, 1>(
        stat,
        |i| [term(i), term(i + 4)],
        |i| term(i),
        |i| {
            let v = A::round1(A::get(x.add(i)) + A::get(res.add(i)));
            A::put(h.add(i), v);
            [v * v]
        },
    );
    add_rows::<V, A>(x.add(stat), res.add(stat), h.add(stat), n - stat);
    s
}

/// `y = (x · r) · g` (or `x · r` without gain; `g` is `offset + g` with `O`).
///
/// A second pass over the row, which is still in L1/L2 from the first. (Fusing the next
/// row's first pass into this loop, so that loads and stores overlap as in a copy, was tried
/// for forward and backward and measured no faster here: 47–52% of copy speed at 4096×4096
/// instead of 58–61% for the forward, within noise for the backward. Walking this pass
/// backwards, to meet first the lines the first pass read last, was slower still: 47–50%.
/// Tried again for half-precision rows, whose scaling is compute-bound: within ±10% of two
/// passes, better for float16, worse for bfloat16 at 4096×4096 — not kept.)
///
/// With `L` (the `llama` casting mode) `x · r` is rounded to the activations' type before the
/// gain multiplies it, as Hugging Face's LlamaRMSNorm does (`weight * h.to(input_dtype)`).
#[inline(always)]
unsafe fn scale_row<V: F32x4, A: Elem, const W: bool, const O: bool, const L: bool>(
    x: *const A,
    g: *const f32,
    offset: f32,
    y: *mut A,
    n: usize,
    r: f32,
) {
    let rv = V::splat(r);
    let ov = V::splat(offset);
    let scale = |xv: V, i: usize| {
        let v = xv.mul(rv);
        if W {
            let v = if L { A::round(v) } else { v };
            v.mul(gain::<V, O>(g, ov, i))
        } else {
            v
        }
    };
    let eight = |i: usize| {
        let [x0, x1] = A::load8::<V>(x.add(i));
        [scale(x0, i), scale(x1, i + 4)]
    };
    let mut i = 0;
    while i + 16 <= n {
        let (v0, v1) = (eight(i), eight(i + 8));
        A::store8::<V>(y.add(i), v0);
        A::store8::<V>(y.add(i + 8), v1);
        i += 16;
    }
    while i + 4 <= n {
        A::store::<V>(y.add(i), scale(A::load::<V>(x.add(i)), i));
        i += 4;
    }
    while i < n {
        let v = A::get(x.add(i)) * r;
        let v = if W {
            let v = if L { A::round1(v) } else { v };
            v * gain1::<O>(g, offset, i)
        } else {
            v
        };
        A::put(y.add(i), v);
        i += 1;
    }
}

/// `acc[i] += src[i]` for `n` floats (lane-wise, so the same bits as a scalar loop).
#[inline(always)]
unsafe fn add_into<V: F32x4>(acc: *mut f32, src: *const f32, n: usize) {
    let mut i = 0;
    while i + 4 <= n {
        V::load(acc.add(i))
            .add(V::load(src.add(i)))
            .store(acc.add(i));
        i += 4;
    }
    while i < n {
        *acc.add(i) += *src.add(i);
        i += 1;
    }
}

/// Pointers and parameters of one forward call. The activations (`x`, `res`, `y`, `h`) are
/// stored as `A` (f32, or a half type: then each result is rounded to it once, or twice with
/// `llama`); the gain and rstd are always f32.
#[derive(Clone, Copy, Debug)]
pub struct Forward<A: Elem = f32> {
    /// Input, `rows × dim`.
    pub x: *const A,
    /// Residual, `rows × dim`, or null. With it the row normalized is `h = x + res`, written
    /// to `h` (the fused residual add).
    pub res: *const A,
    /// Gain, `dim`; null for none (g = 1, and `offset` is not used).
    pub g: *const f32,
    /// Output, `rows × dim`; may equal `x`.
    pub y: *mut A,
    /// With `res`: receives `x + res`, `rows × dim`; may equal `x` or `res`, not `y`.
    pub h: *mut A,
    /// Receives one rstd per row, or null.
    pub rstd: *mut f32,
    /// Row length.
    pub dim: usize,
    /// Added inside the square root.
    pub eps: f32,
    /// Added to the gain: `y = x · rstd · (offset + g)` (Gemma: 1).
    pub offset: f32,
    /// The rms is estimated from the first `stat` elements of each row (pRMSNorm), `1..=dim`.
    pub stat: usize,
    /// The `llama` casting mode (half types with a gain): `x · rstd` is rounded to `A` before
    /// the gain multiplies it. Without it one rounding at the end (`none`, `gemma`).
    pub llama: bool,
}

impl Forward {
    /// A plain forward: no residual, no offset, the rms over the whole row.
    pub fn plain(
        x: *const f32,
        g: *const f32,
        y: *mut f32,
        rstd: *mut f32,
        dim: usize,
        eps: f32,
    ) -> Self {
        let h = core::ptr::null_mut();
        Forward {
            x,
            res: core::ptr::null(),
            g,
            y,
            h,
            rstd,
            dim,
            eps,
            offset: 0.0,
            stat: dim,
            llama: false,
        }
    }
}

/// Forward of one row; returns its rstd. Two passes: the sum of squares over the first `stat`
/// floats (with `F`, forming and writing `h = x + res` over the whole row in the same pass),
/// then the scaling, which reads the row again while it is still in cache.
#[inline(always)]
unsafe fn forward_row<V: F32x4, A: Elem, const W: bool, const O: bool, const F: bool, const L: bool>(
    k: &Forward<A>,
    row: usize,
) -> f32 {
    let n = k.dim;
    let off = row * n;
    let y = k.y.add(off);
    let (src, ss) = if F {
        let h = k.h.add(off);
        (
            h as *const A,
            add_sum_sq::<V, A>(k.x.add(off), k.res.add(off), h, n, k.stat),
        )
    } else {
        let x = k.x.add(off);
        (x, sum_sq::<V, A>(x, k.stat))
    };
    if !ss_is_fast(ss, k.eps) {
        return forward_row_f64::<A, W, O, L>(k, src, y);
    }
    let r = 1.0 / (ss / k.stat as f32 + k.eps).sqrt();
    scale_row::<V, A, W, O, L>(src, k.g, k.offset, y, n, r);
    r
}

/// The forward of a row whose sum of squares f32 cannot hold: all in f64 (from `src`, the row
/// or its `h`). The returned rstd is rounded to f32 and saturates to inf for rows whose rms is
/// below f32's range.
#[cold]
#[inline(never)]
unsafe fn forward_row_f64<A: Elem, const W: bool, const O: bool, const L: bool>(
    k: &Forward<A>,
    src: *const A,
    y: *mut A,
) -> f32 {
    let mut ss = 0f64;
    for i in 0..k.stat {
        let v = A::get(src.add(i)) as f64;
        ss += v * v;
    }
    let r = 1.0 / (ss / k.stat as f64 + k.eps as f64).sqrt();
    for i in 0..k.dim {
        let v = A::get(src.add(i)) as f64 * r;
        let v = if W {
            // llama: x·rstd rounded to A first (through f32: A is at most f32's precision).
            let v = if L { A::round1(v as f32) as f64 } else { v };
            v * gain1::<O>(k.g, k.offset, i) as f64
        } else {
            v
        };
        // f64 → f32 → A rounds twice; a half's value is then within one of its ulps.
        A::put(y.add(i), v as f32);
    }
    r as f32
}

/// RMSNorm forward over `rows` rows: `y = h · rstd · (offset + g)` with `h = x (+ res)` and
/// `rstd = 1/sqrt(Σ_{i<stat} h_i² / stat + eps)`. See [`Forward`] for what may be null and
/// what may alias.
///
/// # Safety
/// Every non-null pointer must be valid for its shape (see the module docs); `h` non-null
/// when `res` is; `1 <= stat <= dim`.
pub unsafe fn forward_with<V: F32x4, A: Elem>(k: &Forward<A>, rows: usize) {
    // One function per flavour, never inlined into the dispatch: inlined, the twelve flavours
    // made one function so large that the engine compiled the backward 10-20% slower.
    #[inline(never)]
    unsafe fn go<V: F32x4, A: Elem, const W: bool, const O: bool, const F: bool, const L: bool>(
        k: &Forward<A>,
        rows: usize,
    ) {
        for r in 0..rows {
            let rs = forward_row::<V, A, W, O, F, L>(k, r);
            if !k.rstd.is_null() {
                *k.rstd.add(r) = rs;
            }
        }
    }
    // llama differs only for a half type with a gain: elsewhere it is not instantiated.
    let l = k.llama && is_half::<A>() && !k.g.is_null();
    match (k.g.is_null(), k.offset != 0.0, k.res.is_null(), l) {
        (true, _, true, _) => go::<V, A, false, false, false, false>(k, rows),
        (true, _, false, _) => go::<V, A, false, false, true, false>(k, rows),
        (false, false, true, false) => go::<V, A, true, false, false, false>(k, rows),
        (false, false, false, false) => go::<V, A, true, false, true, false>(k, rows),
        (false, true, true, false) => go::<V, A, true, true, false, false>(k, rows),
        (false, true, false, false) => go::<V, A, true, true, true, false>(k, rows),
        (false, false, true, true) => go::<V, A, true, false, false, true>(k, rows),
        (false, false, false, true) => go::<V, A, true, false, true, true>(k, rows),
        (false, true, true, true) => go::<V, A, true, true, false, true>(k, rows),
        (false, true, false, true) => go::<V, A, true, true, true, true>(k, rows),
    }
}

/// Whether `A` is a half type (the `llama` mode's extra rounding does something).
#[inline(always)]
fn is_half<A: Elem>() -> bool {
    core::mem::size_of::<A>() == 2
}

/// RMSNorm forward over `rows` rows of `dim`: `y = x · rstd · g` ([`forward_with`] of
/// [`Forward::plain`]).
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
    forward_with::<V, f32>(&Forward::plain(x, g, y, rstd_out, dim, eps), rows)
}

/// Pointers and parameters of one backward call, shared by the sync path and the pool's shards.
/// The activations and their gradients (`dy`, `x`, `dh`, `dx`) are stored as `A`; the gain,
/// rstd and the weight gradient are f32.
#[derive(Clone, Copy, Debug)]
pub struct Backward<A: Elem = f32> {
    /// Upstream gradient, `rows × dim`.
    pub dy: *const A,
    /// Forward input, `rows × dim` (with a fused residual add: the forward's `h = x + res`).
    pub x: *const A,
    /// Gain, `dim`; null for none (then no weight gradient is formed, and `offset` is not used).
    pub g: *const f32,
    /// Saved rstd from the forward, `rows`; null to recompute it from `x`, `eps` and `stat`.
    pub rstd: *const f32,
    /// Gradient arriving on the residual stream, `rows × dim`, added to `dx`; or null.
    pub dh: *const A,
    /// Destination of the input gradient, `rows × dim`; may equal `dy`, `x` or `dh`.
    pub dx: *mut A,
    /// Row length.
    pub dim: usize,
    /// Added inside the square root when rstd is recomputed.
    pub eps: f32,
    /// As the forward's: the gain is `offset + g`.
    pub offset: f32,
    /// As the forward's: rstd came from the first `stat` elements, `1..=dim`.
    pub stat: usize,
    /// As the forward's (half types with a gain): `gy = dy·g` is rounded to `A`, and the
    /// weight gradient takes `dy · round(x·rstd)`, as autograd does through LlamaRMSNorm.
    pub llama: bool,
    /// With `llama`, the weight is stored in `A` too: autograd then forms each row's weight
    /// gradient term `dy · round(x·rstd)` as a product of two `A` tensors, rounded to `A`
    /// before the rows are summed (a float32 weight sums the unrounded products).
    pub llama_w: bool,
}

impl Backward {
    /// A plain backward: no residual gradient, no offset, rstd over the whole row.
    pub fn plain(
        dy: *const f32,
        x: *const f32,
        g: *const f32,
        rstd: *const f32,
        dx: *mut f32,
        dim: usize,
        eps: f32,
    ) -> Self {
        let dh = core::ptr::null();
        Backward {
            dy,
            x,
            g,
            rstd,
            dh,
            dx,
            dim,
            eps,
            offset: 0.0,
            stat: dim,
            llama: false,
            llama_w: false,
        }
    }
}

/// `dx = a·gy − b·x (+ dh)` over elements `[from, to)` of a row (`B` false: without the `b·x`
/// term, the elements past `stat` that did not enter rstd); with a gain, `p += dy·(x·a)`
/// (with `L`, `x·a` rounded to `A` first: the forward's `y` before the gain).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn backward_elems<
    V: F32x4,
    A: Elem,
    const W: bool,
    const O: bool,
    const D: bool,
    const B: bool,
    const L: bool,
>(
    k: &Backward<A>,
    off: usize,
    from: usize,
    to: usize,
    a: f32,
    b: f32,
    p: *mut f32,
) {
    let (dy, x, dx, g) = (k.dy.add(off), k.x.add(off), k.dx.add(off), k.g);
    // dh may be null (D false): wrapping_add, as add on null is undefined.
    let dh = k.dh.wrapping_add(off);
    let (av, bv, ov) = (V::splat(a), V::splat(b), V::splat(k.offset));
    // dx of lanes i..i+4 from their loaded x and dy (and dh).
    let one = |xv: V, d: V, dhv: V, i: usize| {
        let gy = gy_from::<V, A, W, O, L>(d, g, ov, i);
        if W {
            let xa = if L { A::round(xv.mul(av)) } else { xv.mul(av) };
            let t = if L && k.llama_w { A::round(d.mul(xa)) } else { d.mul(xa) };
            let pv = V::load(p.add(i));
            pv.add(t).store(p.add(i));
        }
        let v = if B {
            av.mul(gy).sub(bv.mul(xv))
        } else {
            av.mul(gy)
        };
        if D {
            v.add(dhv)
        } else {
            v
        }
    };
    let mut i = from;
    while i + 8 <= to {
        let [x0, x1] = A::load8::<V>(x.add(i));
        let [d0, d1] = A::load8::<V>(dy.add(i));
        let [h0, h1] = if D { A::load8::<V>(dh.add(i)) } else { [V::zero(); 2] };
        let v = [one(x0, d0, h0, i), one(x1, d1, h1, i + 4)];
        A::store8::<V>(dx.add(i), v);
        i += 8;
    }
    while i + 4 <= to {
        let dhv = if D { A::load::<V>(dh.add(i)) } else { V::zero() };
        let v = one(A::load::<V>(x.add(i)), A::load::<V>(dy.add(i)), dhv, i);
        A::store::<V>(dx.add(i), v);
        i += 4;
    }
    while i < to {
        let xv = A::get(x.add(i));
        let gy = gy1_of::<A, W, O, L>(dy, g, k.offset, i);
        if W {
            let xa = if L { A::round1(xv * a) } else { xv * a };
            let t = A::get(dy.add(i)) * xa;
            *p.add(i) += if L && k.llama_w { A::round1(t) } else { t };
        }
        let v = if B { a * gy - b * xv } else { a * gy };
        A::put(dx.add(i), if D { v + A::get(dh.add(i)) } else { v });
        i += 1;
    }
}

/// Backward of one row; with a gain, adds `dy · x · rstd` into the block partial `p`.
///
/// With `gy = dy·(offset + g)`, `c = Σ gy·x` over the whole row and rstd from its first `stat`
/// elements: `dx_i = rstd·gy_i − [i < stat]·x_i·rstd³·c/stat (+ dh_i)` — the gradient through
/// rstd reaches only the elements it was estimated from. Passes: one for `c` (and the sum of
/// squares when rstd is recomputed: over the whole row in the same pass, or with `stat < dim`
/// a second pass over the first `stat`), one for `dx`.
#[inline(always)]
unsafe fn backward_row<
    V: F32x4,
    A: Elem,
    const W: bool,
    const R: bool,
    const O: bool,
    const D: bool,
    const L: bool,
>(
    k: &Backward<A>,
    row: usize,
    p: *mut f32,
) {
    let n = k.dim;
    let off = row * n;
    let x = k.x.add(off);
    let whole = k.stat == n;
    let dy = k.dy.add(off);
    // `with_ss` must be a constant at each call: a flag tested inside the fold costs 20-30%.
    let (c, ss) = if R {
        dot_gy_x::<V, A, W, O, L>(dy, k.g, k.offset, x, n, false)
    } else if whole {
        dot_gy_x::<V, A, W, O, L>(dy, k.g, k.offset, x, n, true)
    } else {
        partial_sums::<V, A, W, O, L>(k, dy, x)
    };
    let rstd = if R {
        *k.rstd.add(row)
    } else if ss_is_fast(ss, k.eps) {
        1.0 / (ss / k.stat as f32 + k.eps).sqrt()
    } else {
        f32::NAN // sends the row to the f64 path below
    };
    // dx = rstd·gy − x·(rstd³·c/stat) = a·gy − b·x
    let a = rstd;
    let b = (c / k.stat as f32) * rstd * (rstd * rstd);
    if !(rstd >= RSTD_LO && rstd <= RSTD_HI && c.is_finite() && b.is_finite()) {
        return backward_row_f64::<A, W, R, O, D, L>(k, row, p);
    }
    backward_elems::<V, A, W, O, D, true, L>(k, off, 0, k.stat, a, b, p);
    if !whole {
        backward_elems::<V, A, W, O, D, false, L>(k, off, k.stat, n, a, b, p);
    }
}

/// pRMSNorm's backward sums: `Σ gy·x` over the row and `Σ x²` over its first `stat`. Out of
/// line, so that the code of whole rows (every plain call) stays as small as before.
#[inline(never)]
unsafe fn partial_sums<V: F32x4, A: Elem, const W: bool, const O: bool, const L: bool>(
    k: &Backward<A>,
    dy: *const A,
    x: *const A,
) -> (f32, f32) {
    (
        dot_gy_x::<V, A, W, O, L>(dy, k.g, k.offset, x, k.dim, false).0,
        sum_sq::<V, A>(x, k.stat),
    )
}

/// The backward of a row f32 cannot do faithfully (rms outside about [1e-12, 1e12], overflow
/// in `Σ gy·x`, or a NaN/Inf): all in f64, each result rounded once to f32 (then to `A`).
#[cold]
#[inline(never)]
unsafe fn backward_row_f64<
    A: Elem,
    const W: bool,
    const R: bool,
    const O: bool,
    const D: bool,
    const L: bool,
>(
    k: &Backward<A>,
    row: usize,
    p: *mut f32,
) {
    let n = k.dim;
    let off = row * n;
    let (dy, x, dx, g) = (k.dy.add(off), k.x.add(off), k.dx.add(off), k.g);
    // dh may be null (D false): wrapping_add, as add on null is undefined.
    let dh = k.dh.wrapping_add(off);
    let gy = |i: usize| {
        let d = A::get(dy.add(i)) as f64;
        if !W {
            d
        } else if L {
            A::round1((d * gain1::<O>(g, k.offset, i) as f64) as f32) as f64
        } else {
            d * gain1::<O>(g, k.offset, i) as f64
        }
    };
    let (mut c, mut ss) = (0f64, 0f64);
    for i in 0..n {
        let xv = A::get(x.add(i)) as f64;
        c += gy(i) * xv;
        if i < k.stat {
            ss += xv * xv;
        }
    }
    let stat = k.stat as f64;
    let rstd = if R {
        *k.rstd.add(row) as f64
    } else {
        1.0 / (ss / stat + k.eps as f64).sqrt()
    };
    let b = rstd * rstd * rstd * (c / stat);
    for i in 0..n {
        let xv = A::get(x.add(i)) as f64;
        let gyv = gy(i);
        if W {
            let xa = if L { A::round1((xv * rstd) as f32) as f64 } else { xv * rstd };
            let t = (A::get(dy.add(i)) as f64 * xa) as f32;
            *p.add(i) += if L && k.llama_w { A::round1(t) } else { t };
        }
        let v = rstd * gyv - if i < k.stat { b * xv } else { 0.0 };
        A::put(dx.add(i), (if D { v + A::get(dh.add(i)) as f64 } else { v }) as f32);
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
/// gradient, llama (only for a half type with a gain).
fn rows_fn<V: F32x4, A: Elem>(k: &Backward<A>) -> RowsFn<A> {
    let w = !k.g.is_null();
    let o = w && k.offset != 0.0;
    let l = w && k.llama && is_half::<A>();
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
pub unsafe fn backward<V: F32x4, A: Elem>(k: &Backward<A>, rows: usize, dg: *mut f32, work: *mut f32) {
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
        core::ptr::write_bytes(dg, 0, k.dim);
    }
    for_each_block(row0, row0 + rows, |s, e, _| {
        if w && s % DG_BLOCK_ROWS == 0 {
            core::ptr::write_bytes(work, 0, k.dim);
        }
        go(k, s - row0, e - row0, work);
        if w && (e % DG_BLOCK_ROWS == 0 || e == total) {
            add_into::<V>(dg, work, k.dim);
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
        let p = if w { partials.add(b * k.dim) } else { partials };
        if w {
            core::ptr::write_bytes(p, 0, k.dim);
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
        let one = |i: usize| [V::load(x.add(i))];
        let [s] = fold::<V, 1>(n, |i| [one(i), one(i + 4)], one, |i| [*x.add(i)]);
        let mean = s / n as f32;
        // pass 2: variance around the mean (two-pass, as LayerNorm implementations do)
        let m = V::splat(mean);
        let sq = |i: usize| {
            let v = V::load(x.add(i)).sub(m);
            [v.mul(v)]
        };
        let [s] = fold::<V, 1>(
            n,
            |i| [sq(i), sq(i + 4)],
            sq,
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

/// `out = a + b` over `n` floats (lane-wise; `out` may equal `a` or `b`): the unfused residual
/// add the benchmark compares the fused forward against.
///
/// # Safety
/// `a`, `b` readable and `out` writable for `n` floats.
pub unsafe fn add<V: F32x4>(a: *const f32, b: *const f32, out: *mut f32, n: usize) {
    add_rows::<V, f32>(a, b, out, n)
}
