//! The backward's passes over one row: its sums (`c = Σ gy·x`, and the sum of squares when
//! rstd is recomputed), the coefficients of `dx` they give ([`terms`]), and the `dx` pass,
//! which also adds the row's weight-gradient terms. backward.rs runs them row by row.

use super::args::Backward;
use super::reduce::{backward_is_fast, fast_rstd, fold_into, sum_sq_into};
use crate::elem::Elem;
use crate::simd::F32x4;

/// What a row's `dx` pass needs besides its data: `dx = a·gy − b·x`, and the casting of the
/// weight gradient's terms.
#[derive(Clone, Copy)]
pub(super) struct Terms {
    a: f32,
    b: f32,
    /// With the llama casting, the weight has the activations' type: each term rounded to it too.
    llama_w: bool,
}

/// The row's sums over a stretch, added into `acc`: `Σ gy·x` and, with `SS`, `Σ x²` (a
/// constant at each call: a flag tested inside the fold costs 20-30%). `dy` and `x` stored as
/// `X`; `gy = dy · g` (rounded to `R` with `llama`).
#[inline(always)]
pub(super) unsafe fn dot_into<V: F32x4, X: Elem, R: Elem, const SS: bool, const LLAMA: bool>(
    acc: &mut [f64; 2],
    dy: *const X,
    g: *const f32,
    x: *const X,
    n: usize,
) {
    let llama = LLAMA;
    let gy = |d: V, i: usize| {
        let v = d.mul(V::load(g.add(i)));
        if llama {
            R::round(v)
        } else {
            v
        }
    };
    let terms = |gy: V, xv: V| [gy.mul(xv), if SS { xv.mul(xv) } else { V::zero() }];
    fold_into::<V, 2>(
        acc,
        n,
        |i| {
            let [d0, d1] = X::load8::<V>(dy.add(i));
            let [x0, x1] = X::load8::<V>(x.add(i));
            [terms(gy(d0, i), x0), terms(gy(d1, i + 4), x1)]
        },
        |i| terms(gy(X::load::<V>(dy.add(i)), i), X::load::<V>(x.add(i))),
        |i| {
            let xv = X::get(x.add(i));
            let d = X::get(dy.add(i)) * *g.add(i);
            let gy = if llama { R::round1(d) } else { d };
            [gy * xv, if SS { xv * xv } else { 0.0 }]
        },
    );
}

/// `dx = a·gy − b·x (+ dh)` over a stretch of `n` elements (`bterm` false: without `b·x`, the
/// elements past `stat` that did not enter rstd); with a weight, `p += dy·(x·a)` (with llama,
/// `x·a` rounded to `R` first: the forward's `y` before the gain, and with `llama_w` each term
/// too). `dy`, `x` and `dh` read as `X`, `dx` stored as `A`; `dh` may be null.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn dx_pass<
    V: F32x4,
    X: Elem,
    A: Elem,
    R: Elem,
    const BTERM: bool,
    const W: bool,
    const D: bool,
    const L: bool,
>(
    dy: *const X,
    x: *const X,
    dh: *const X,
    g: *const f32,
    dx: *mut A,
    p: *mut f32,
    n: usize,
    t: Terms,
) {
    let bterm = BTERM;
    let (av, bv) = (V::splat(t.a), V::splat(t.b));
    let (weight, residual) = (W, D);
    let llama_w = L && t.llama_w;
    // dx of lanes i..i+4 from their loaded x and dy.
    let one = |xv: V, d: V, i: usize| {
        let gy = d.mul(V::load(g.add(i)));
        let gy = if L { R::round(gy) } else { gy };
        if weight {
            let xa = xv.mul(av);
            let xa = if L { R::round(xa) } else { xa };
            let term = d.mul(xa);
            let term = if llama_w { R::round(term) } else { term };
            V::load(p.add(i)).add(term).store(p.add(i));
        }
        let v = if bterm {
            av.mul(gy).sub(bv.mul(xv))
        } else {
            av.mul(gy)
        };
        if residual {
            v.add(X::load::<V>(dh.add(i)))
        } else {
            v
        }
    };
    let mut i = 0;
    while i + 8 <= n {
        let [x0, x1] = X::load8::<V>(x.add(i));
        let [d0, d1] = X::load8::<V>(dy.add(i));
        let v = [one(x0, d0, i), one(x1, d1, i + 4)];
        A::store8::<V>(dx.add(i), v);
        i += 8;
    }
    while i + 4 <= n {
        let v = one(X::load::<V>(x.add(i)), X::load::<V>(dy.add(i)), i);
        A::store::<V>(dx.add(i), v);
        i += 4;
    }
    while i < n {
        let (xv, d) = (X::get(x.add(i)), X::get(dy.add(i)));
        let gy = d * *g.add(i);
        let gy = if L { R::round1(gy) } else { gy };
        if weight {
            let xa = if L { R::round1(xv * t.a) } else { xv * t.a };
            let term = d * xa;
            *p.add(i) += if llama_w { R::round1(term) } else { term };
        }
        let v = if bterm { t.a * gy - t.b * xv } else { t.a * gy };
        A::put(dx.add(i), if residual { v + X::get(dh.add(i)) } else { v });
        i += 1;
    }
}

/// The row's `c` and sum of squares: `(c, ss)`, with the saved rstd (`saved`: no sum of
/// squares) or over the first `stat` elements of the row (pRMSNorm: a pass of its own over
/// those). `dy` and `x` stored as `X`, `g` the gain row.
#[inline(always)]
pub(super) unsafe fn sums<V: F32x4, X: Elem, R: Elem, const L: bool>(
    dy: *const X,
    x: *const X,
    g: *const f32,
    n: usize,
    stat: usize,
    saved: bool,
) -> (f32, f32) {
    let mut acc = [0f64; 2];
    if stat == n && !saved {
        dot_into::<V, X, R, true, L>(&mut acc, dy, g, x, n);
        return (acc[0] as f32, acc[1] as f32);
    }
    dot_into::<V, X, R, false, L>(&mut acc, dy, g, x, n);
    if saved {
        return (acc[0] as f32, 0.0);
    }
    let mut ss = [0f64; 1];
    sum_sq_into::<V, X>(&mut ss, x, stat);
    (acc[0] as f32, ss[0] as f32)
}

/// The `dx` pass over a row of `n` elements whose first `stat` entered rstd: those with the
/// `b·x` term, the rest without.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn dx_row<
    V: F32x4,
    X: Elem,
    A: Elem,
    R: Elem,
    const W: bool,
    const D: bool,
    const L: bool,
>(
    dy: *const X,
    x: *const X,
    dh: *const X,
    g: *const f32,
    dx: *mut A,
    p: *mut f32,
    n: usize,
    stat: usize,
    t: Terms,
) {
    dx_pass::<V, X, A, R, true, W, D, L>(dy, x, dh, g, dx, p, stat, t);
    if stat < n {
        let (pc, dhc) = (
            if W { p.add(stat) } else { p },
            if D { dh.add(stat) } else { dh },
        );
        dx_pass::<V, X, A, R, false, W, D, L>(
            dy.add(stat),
            x.add(stat),
            dhc,
            g.add(stat),
            dx.add(stat),
            pc,
            n - stat,
            t,
        );
    }
}

/// The row's `dx` coefficients from its sums, or None when f32 cannot do the row faithfully
/// (rms outside about [1e-12, 1e12], overflow in `Σ gy·x`, a NaN or an infinity).
#[inline(always)]
pub(super) unsafe fn terms<A: Elem>(
    k: &Backward<A>,
    row: usize,
    c: f32,
    ss: f32,
    llama: bool,
) -> Option<Terms> {
    let rstd = if k.rstd.is_null() {
        fast_rstd(ss, k.s.stat, k.s.p.eps).unwrap_or(f32::NAN) // NaN sends the row to the f64 path
    } else {
        *k.rstd.add(row)
    };
    // dx = rstd·gy − x·(rstd³·c/stat) = a·gy − b·x
    let b = (c / k.s.stat as f32) * rstd * (rstd * rstd);
    if !backward_is_fast(rstd, c, b) {
        return None;
    }
    Some(Terms {
        a: rstd,
        b,
        llama_w: llama && k.s.llama_w,
    })
}
