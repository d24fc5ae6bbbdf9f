//! The backward of one row: `dx`, and its dweight terms added into a block partial.

use super::elems::{gain1, gy1_of, gy_from};
use super::forward::SCRATCH;
use super::reduce::{dot_gy_x, fast_rstd, sum_sq};
use super::scalars::Scalars;
use crate::elem::{widen, Elem};
use crate::simd::F32x4;

/// Backward's fast path needs `rstd³` to be a normal f32: rstd within [2^-40, 2^40].
pub(super) const RSTD_LO: f32 = f32::from_bits(87 << 23);
pub(super) const RSTD_HI: f32 = f32::from_bits(167 << 23);

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
    /// The gate's input, `rows × dim`, with `gate` not `None` (then `dh` is null); else null.
    pub z: *const A,
    /// Destination of the gate's gradient, `rows × dim`, with `z`; may equal `dy`, not `dx`.
    pub dz: *mut A,
    /// The call's scalars and flags (`eps` used when rstd is recomputed).
    pub s: Scalars,
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
            z: core::ptr::null(),
            dz: core::ptr::null_mut(),
            s: Scalars::plain(dim, eps),
        }
    }
}

/// `dx = a·gy − b·x (+ dh)` over elements `[from, to)` of the row at `off` (`B` false: without
/// the `b·x` term, the elements past `stat` that did not enter rstd); with a gain, `p +=
/// dy·(x·a)` (with `L`, `x·a` rounded to `A` first: the forward's `y` before the gain). The
/// row's `x` and `dy` are read from `x` and `dy`, stored as `X` (see [`dot_gy_x`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn backward_elems<
    V: F32x4,
    X: Elem,
    A: Elem,
    const W: bool,
    const O: bool,
    const D: bool,
    const B: bool,
    const L: bool,
>(
    k: &Backward<A>,
    x: *const X,
    dy: *const X,
    off: usize,
    from: usize,
    to: usize,
    a: f32,
    b: f32,
    p: *mut f32,
) {
    let (dx, g) = (k.dx.add(off), k.g);
    // dh may be null (D false): wrapping_add, as add on null is undefined.
    let dh = k.dh.wrapping_add(off);
    let (av, bv, ov) = (V::splat(a), V::splat(b), V::splat(k.s.offset));
    // dx of lanes i..i+4 from their loaded x and dy (and dh).
    let one = |xv: V, d: V, dhv: V, i: usize| {
        let gy = gy_from::<V, A, W, O, L>(d, g, ov, i);
        if W {
            let xa = if L { A::round(xv.mul(av)) } else { xv.mul(av) };
            let t = if L && k.s.llama_w {
                A::round(d.mul(xa))
            } else {
                d.mul(xa)
            };
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
        let [x0, x1] = X::load8::<V>(x.add(i));
        let [d0, d1] = X::load8::<V>(dy.add(i));
        let [h0, h1] = if D {
            A::load8::<V>(dh.add(i))
        } else {
            [V::zero(); 2]
        };
        let v = [one(x0, d0, h0, i), one(x1, d1, h1, i + 4)];
        A::store8::<V>(dx.add(i), v);
        i += 8;
    }
    while i + 4 <= to {
        let dhv = if D {
            A::load::<V>(dh.add(i))
        } else {
            V::zero()
        };
        let v = one(X::load::<V>(x.add(i)), X::load::<V>(dy.add(i)), dhv, i);
        A::store::<V>(dx.add(i), v);
        i += 4;
    }
    while i < to {
        let xv = X::get(x.add(i));
        let gy = gy1_of::<X, A, W, O, L>(dy, g, k.s.offset, i);
        if W {
            let xa = if L { A::round1(xv * a) } else { xv * a };
            let t = X::get(dy.add(i)) * xa;
            *p.add(i) += if L && k.s.llama_w { A::round1(t) } else { t };
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
/// a second pass over the first `stat`), one for `dx`. A type whose widening is costly
/// ([`Elem::WIDEN_ONCE`]) has its row's `x` and `dy` widened once into f32 on the stack, which
/// both passes read: the same values in the same order, so the same bits.
#[inline(always)]
pub(super) unsafe fn backward_row<
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
    let off = row * k.s.dim;
    if A::WIDEN_ONCE && k.s.dim <= SCRATCH {
        let mut bx = core::mem::MaybeUninit::<[f32; SCRATCH]>::uninit();
        let mut bd = core::mem::MaybeUninit::<[f32; SCRATCH]>::uninit();
        let (wx, wd) = (bx.as_mut_ptr() as *mut f32, bd.as_mut_ptr() as *mut f32);
        widen::<V, A>(k.x.add(off), wx, k.s.dim);
        widen::<V, A>(k.dy.add(off), wd, k.s.dim);
        return backward_row_of::<V, f32, A, W, R, O, D, L>(k, row, wx, wd, p);
    }
    backward_row_of::<V, A, A, W, R, O, D, L>(k, row, k.x.add(off), k.dy.add(off), p)
}

/// [`backward_row`] reading the row's `x` and `dy` from `x` and `dy`, stored as `X`.
#[inline(always)]
unsafe fn backward_row_of<
    V: F32x4,
    X: Elem,
    A: Elem,
    const W: bool,
    const R: bool,
    const O: bool,
    const D: bool,
    const L: bool,
>(
    k: &Backward<A>,
    row: usize,
    x: *const X,
    dy: *const X,
    p: *mut f32,
) {
    let n = k.s.dim;
    let off = row * n;
    let whole = k.s.stat == n;
    // `with_ss` must be a constant at each call: a flag tested inside the fold costs 20-30%.
    let (c, ss) = if R {
        dot_gy_x::<V, X, A, W, O, L>(dy, k.g, k.s.offset, x, n, false)
    } else if whole {
        dot_gy_x::<V, X, A, W, O, L>(dy, k.g, k.s.offset, x, n, true)
    } else {
        partial_sums::<V, X, A, W, O, L>(k, dy, x)
    };
    let rstd = if R {
        *k.rstd.add(row)
    } else {
        fast_rstd(ss, k.s.stat, k.s.eps).unwrap_or(f32::NAN) // NaN sends the row to the f64 path below
    };
    // dx = rstd·gy − x·(rstd³·c/stat) = a·gy − b·x
    let a = rstd;
    let b = (c / k.s.stat as f32) * rstd * (rstd * rstd);
    if !(rstd >= RSTD_LO && rstd <= RSTD_HI && c.is_finite() && b.is_finite()) {
        return backward_row_f64::<A, W, R, O, D, L>(k, row, p);
    }
    backward_elems::<V, X, A, W, O, D, true, L>(k, x, dy, off, 0, k.s.stat, a, b, p);
    if !whole {
        backward_elems::<V, X, A, W, O, D, false, L>(k, x, dy, off, k.s.stat, n, a, b, p);
    }
}

/// pRMSNorm's backward sums: `Σ gy·x` over the row and `Σ x²` over its first `stat`. Out of
/// line, so that the code of whole rows (every plain call) stays as small as before.
#[inline(never)]
unsafe fn partial_sums<V: F32x4, X: Elem, A: Elem, const W: bool, const O: bool, const L: bool>(
    k: &Backward<A>,
    dy: *const X,
    x: *const X,
) -> (f32, f32) {
    (
        dot_gy_x::<V, X, A, W, O, L>(dy, k.g, k.s.offset, x, k.s.dim, false).0,
        sum_sq::<V, X>(x, k.s.stat),
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
    let n = k.s.dim;
    let off = row * n;
    let (dy, x, dx, g) = (k.dy.add(off), k.x.add(off), k.dx.add(off), k.g);
    // dh may be null (D false): wrapping_add, as add on null is undefined.
    let dh = k.dh.wrapping_add(off);
    let gy = |i: usize| {
        let d = A::get(dy.add(i)) as f64;
        if !W {
            d
        } else if L {
            A::round1((d * gain1::<O>(g, k.s.offset, i) as f64) as f32) as f64
        } else {
            d * gain1::<O>(g, k.s.offset, i) as f64
        }
    };
    let (mut c, mut ss) = (0f64, 0f64);
    for i in 0..n {
        let xv = A::get(x.add(i)) as f64;
        c += gy(i) * xv;
        if i < k.s.stat {
            ss += xv * xv;
        }
    }
    let stat = k.s.stat as f64;
    let rstd = if R {
        *k.rstd.add(row) as f64
    } else {
        1.0 / (ss / stat + k.s.eps as f64).sqrt()
    };
    let b = rstd * rstd * rstd * (c / stat);
    for i in 0..n {
        let xv = A::get(x.add(i)) as f64;
        let gyv = gy(i);
        if W {
            let xa = if L {
                A::round1((xv * rstd) as f32) as f64
            } else {
                xv * rstd
            };
            let t = (A::get(dy.add(i)) as f64 * xa) as f32;
            *p.add(i) += if L && k.s.llama_w { A::round1(t) } else { t };
        }
        let v = rstd * gyv - if i < k.s.stat { b * xv } else { 0.0 };
        A::put(
            dx.add(i),
            (if D { v + A::get(dh.add(i)) as f64 } else { v }) as f32,
        );
    }
}
