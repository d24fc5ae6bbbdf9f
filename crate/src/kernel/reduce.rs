//! Reductions over a row, all in the one order [`fold`] fixes, and the tests that decide
//! whether f32 can give a row's rstd (and the backward's terms) faithfully.

use crate::elem::Elem;
use crate::simd::F32x4;

/// 2^-100: below this the sum of squares may be made of subnormal squares that lost bits.
pub(super) const SS_TINY: f32 = f32::from_bits(27 << 23);
/// 2^-76: an eps at least this big swamps any error in a sum of squares below `SS_TINY`.
pub(super) const EPS_TINY: f32 = f32::from_bits(51 << 23);
/// Backward's fast path needs `rstd³` to be a normal f32: rstd within [2^-40, 2^40].
pub(super) const RSTD_LO: f32 = f32::from_bits(87 << 23);
pub(super) const RSTD_HI: f32 = f32::from_bits(167 << 23);

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

/// rstd `= 1/sqrt(ss/stat + eps)` in f64 from an f64 sum of squares over `stat` elements: the
/// slow paths' one formula (rows [`fast_rstd`] refuses).
#[inline(always)]
pub(super) fn rstd_f64(ss: f64, stat: usize, eps: f32) -> f64 {
    1.0 / (ss / stat as f64 + eps as f64).sqrt()
}

/// Whether the backward of a row can go in f32: `rstd³` normal, the sums and `b` finite.
#[inline(always)]
pub(super) fn backward_is_fast(rstd: f32, c: f32, b: f32) -> bool {
    (RSTD_LO..=RSTD_HI).contains(&rstd) && c.is_finite() && b.is_finite()
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
/// always had); a longer row is folded block by block by [`fold_into`], so each of the 16 f32
/// partial sums adds at most 64 terms whatever the row's length. Over a whole row of 2^27
/// floats they added 2^23 terms each and rstd was off by up to 2.9e-3. The error grows with
/// the terms per partial sum: on the worst rows found (constant rows whose squares round the
/// same way at every addition) rstd is off by 2.6e-7 with blocks of 512, 5.0e-7 with 1024,
/// 1.9e-6 with 4096 and 3.8e-6 with 8192 (or one fold over 8192 floats, as rows up to 8192
/// were summed before): 1024 keeps 4× under the 2e-6 promised (test/long-rows.test.ts,
/// crate/tests/kernels.rs) at half the per-block cost of 512.
pub const SUM_BLOCK: usize = 1024;

/// [`fold`] for a stretch of a row of any length: each block of [`SUM_BLOCK`] floats folded,
/// the blocks' sums added into `acc` in f64 in order. A row's passes may go stretch by stretch
/// (each starting on a block boundary) into one `acc`: the bits of one pass over the row. The
/// same bits on every build: the order is fixed and f64 addition is IEEE everywhere.
#[inline(always)]
pub(super) unsafe fn fold_into<V: F32x4, const K: usize>(
    acc: &mut [f64; K],
    n: usize,
    term8: impl Fn(usize) -> [[V; K]; 2],
    term: impl Fn(usize) -> [V; K],
    tail: impl Fn(usize) -> [f32; K],
) {
    let mut b = 0;
    while b < n {
        let len = SUM_BLOCK.min(n - b);
        let part = fold::<V, K>(len, |i| term8(b + i), |i| term(b + i), |i| tail(b + i));
        for k in 0..K {
            acc[k] += part[k] as f64;
        }
        b += len;
    }
}

/// [`fold_into`] over a whole row from zero, rounded to f32. A row of at most one block is one
/// `fold`: its sum goes to f64 and back exactly, so it keeps the bits it always had.
#[inline(always)]
pub(super) unsafe fn fold_long<V: F32x4, const K: usize>(
    n: usize,
    term8: impl Fn(usize) -> [[V; K]; 2],
    term: impl Fn(usize) -> [V; K],
    tail: impl Fn(usize) -> [f32; K],
) -> [f32; K] {
    let mut acc = [0f64; K];
    fold_into::<V, K>(&mut acc, n, term8, term, tail);
    acc.map(|a| a as f32)
}

/// Adds the sum of `x[i]²` over `n` elements stored as `X` into `acc` (in [`fold_into`]'s order).
#[inline(always)]
pub(super) unsafe fn sum_sq_into<V: F32x4, X: Elem>(acc: &mut [f64; 1], x: *const X, n: usize) {
    fold_into::<V, 1>(
        acc,
        n,
        |i| X::load8::<V>(x.add(i)).map(|v| [v.mul(v)]),
        |i| {
            let v = X::load::<V>(x.add(i));
            [v.mul(v)]
        },
        |i| {
            let v = X::get(x.add(i));
            [v * v]
        },
    );
}

/// The fused residual add's first pass over a stretch: `h = x + res` rounded to `R` (the
/// activations' type: the framework's `residual + x` is) and stored as `H`, over `n`
/// elements, and the sum of `h²` over the first `stat` of them added into `acc` — in
/// [`fold_into`]'s order, so with the same bits as [`sum_sq_into`] of a precomputed `h`. One
/// read of `x` and `res`, one write of `h`.
#[inline(never)]
pub(super) unsafe fn add_sum_sq_into<V: F32x4, X: Elem, R: Elem, H: Elem>(
    acc: &mut [f64; 1],
    x: *const X,
    res: *const X,
    h: *mut H,
    n: usize,
    stat: usize,
) {
    let term = |i: usize| {
        let v = R::round(X::load::<V>(x.add(i)).add(X::load::<V>(res.add(i))));
        H::store::<V>(h.add(i), v);
        [v.mul(v)]
    };
    fold_into::<V, 1>(
        acc,
        stat,
        |i| [term(i), term(i + 4)],
        |i| term(i),
        |i| {
            let v = R::round1(X::get(x.add(i)) + X::get(res.add(i)));
            H::put(h.add(i), v);
            [v * v]
        },
    );
    let mut i = stat;
    while i + 4 <= n {
        H::store::<V>(
            h.add(i),
            R::round(X::load::<V>(x.add(i)).add(X::load::<V>(res.add(i)))),
        );
        i += 4;
    }
    while i < n {
        H::put(h.add(i), R::round1(X::get(x.add(i)) + X::get(res.add(i))));
        i += 1;
    }
}
