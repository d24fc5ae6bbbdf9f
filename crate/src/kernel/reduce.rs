//! Reductions over a row, all in the one order [`fold`] fixes, and the test that decides
//! whether f32 can give a row's rstd faithfully.

use super::elems::{add_rows, gy1_of, gy_from, gy_of};
use crate::elem::Elem;
use crate::simd::F32x4;

/// 2^-100: below this the sum of squares may be made of subnormal squares that lost bits.
pub(super) const SS_TINY: f32 = f32::from_bits(27 << 23);
/// 2^-76: an eps at least this big swamps any error in a sum of squares below `SS_TINY`.
pub(super) const EPS_TINY: f32 = f32::from_bits(51 << 23);

/// Whether an f32 sum of squares `ss` is faithful enough for `1/sqrt(ss/stat + eps)`.
#[inline(always)]
fn ss_is_fast(ss: f32, eps: f32) -> bool {
    ss.is_finite() && (ss >= SS_TINY || eps >= EPS_TINY)
}

/// rstd `= 1/sqrt(ss/stat + eps)` in f32, or `None` when f32 cannot give it faithfully: the sum
/// overflowed, it is too small to be exact and eps does not hide that, or the statistic
/// `ss/stat + eps` itself overflows (a large eps) — such rows take the f64 paths.
#[inline(always)]
pub(super) fn fast_rstd(ss: f32, stat: usize, eps: f32) -> Option<f32> {
    let m = ss / stat as f32 + eps;
    if ss_is_fast(ss, eps) && m.is_finite() {
        Some(1.0 / m.sqrt())
    } else {
        None
    }
}

/// The one summation order of every reduction here, on which the same-bits promise rests
/// (every build, every thread count, the host tests): for `i` in steps of 16, four vector
/// accumulators take `term(i)`, `term(i + 4)`, `term(i + 8)`, `term(i + 12)`; then one step of
/// 4 at a time into the first; the accumulators are combined as `(a0 + a1) + (a2 + a3)` and
/// summed across lanes ([`F32x4::hsum`]); then the last `n % 4` scalar terms `tail(i)` are
/// added in order. `K` sums are folded side by side in one pass (the backward needs two).
/// `term8(i)` gives `[term(i), term(i + 4)]` (one wider load of half-precision data).
#[inline(always)]
pub(super) unsafe fn fold<V: F32x4, const K: usize>(
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
pub(super) unsafe fn fold_long<V: F32x4, const K: usize>(
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
pub(super) unsafe fn sum_sq<V: F32x4, A: Elem>(x: *const A, n: usize) -> f32 {
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
/// gain; with `L`, gy rounded to the activations' type `A`) and, when `with_ss` (a constant at
/// every call site, so the unused sum is compiled away), `Σ x²` for a recomputed rstd. `dy`
/// and `x` are stored as `X`: `A`, or f32 rows widened from `A` once.
#[inline(always)]
pub(super) unsafe fn dot_gy_x<
    V: F32x4,
    X: Elem,
    A: Elem,
    const W: bool,
    const O: bool,
    const L: bool,
>(
    dy: *const X,
    g: *const f32,
    offset: f32,
    x: *const X,
    n: usize,
    with_ss: bool,
) -> (f32, f32) {
    let ov = V::splat(offset);
    let terms = |gy: V, xv: V| [gy.mul(xv), if with_ss { xv.mul(xv) } else { V::zero() }];
    let [c, s] = fold_long::<V, 2>(
        n,
        |i| {
            let [d0, d1] = X::load8::<V>(dy.add(i));
            let [x0, x1] = X::load8::<V>(x.add(i));
            [
                terms(gy_from::<V, A, W, O, L>(d0, g, ov, i), x0),
                terms(gy_from::<V, A, W, O, L>(d1, g, ov, i + 4), x1),
            ]
        },
        |i| {
            terms(
                gy_of::<V, X, A, W, O, L>(dy, g, ov, i),
                X::load::<V>(x.add(i)),
            )
        },
        |i| {
            let xv = X::get(x.add(i));
            let gy = gy1_of::<X, A, W, O, L>(dy, g, offset, i);
            [gy * xv, if with_ss { xv * xv } else { 0.0 }]
        },
    );
    (c, s)
}

/// The fused residual add's first pass: `h = x + res` over the row's `n` elements, and the
/// sum of `h²` over its first `stat` (in [`fold_long`]'s order, so with `stat = n` the same
/// bits as [`sum_sq`] of a precomputed `h`: the squares are of `h` as stored, rounded to a
/// half type when the activations are one). One read of `x` and `res`, one write of `h`.
#[inline(always)]
pub(super) unsafe fn add_sum_sq<V: F32x4, A: Elem>(
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
