//! The forward: `y = h · rstd · (offset + g)` with `h = x (+ res)`.

use super::elems::{gain1, scale_row};
use super::gate;
use super::reduce::{add_sum_sq, fast_rstd, sum_sq};
use super::scalars::Scalars;
use crate::abi::Gate;
use crate::elem::{widen, Elem};
use crate::simd::F32x4;

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
    /// The gate's input, `rows × dim`, with `gate` not `None` (then `res` is null); else null.
    pub z: *const A,
    /// The call's scalars and flags.
    pub s: Scalars,
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
            z: core::ptr::null(),
            s: Scalars::plain(dim, eps),
        }
    }
}

/// Forward of one row; returns its rstd. Two passes: the sum of squares over the first `stat`
/// floats (with `F`, forming and writing `h = x + res` over the whole row in the same pass),
/// then the scaling, which reads the row again while it is still in cache.
#[inline(always)]
unsafe fn forward_row<
    V: F32x4,
    A: Elem,
    const W: bool,
    const O: bool,
    const F: bool,
    const L: bool,
>(
    k: &Forward<A>,
    row: usize,
) -> f32 {
    let n = k.s.dim;
    let off = row * n;
    let y = k.y.add(off);
    let (src, ss) = if F {
        let h = k.h.add(off);
        (
            h as *const A,
            add_sum_sq::<V, A>(k.x.add(off), k.res.add(off), h, n, k.s.stat),
        )
    } else {
        let x = k.x.add(off);
        if A::WIDEN_ONCE && n <= SCRATCH {
            return forward_row_widened::<V, A, W, O, L>(k, x, y);
        }
        (x, sum_sq::<V, A>(x, k.s.stat))
    };
    let Some(r) = fast_rstd(ss, k.s.stat, k.s.eps) else {
        return forward_row_f64::<A, W, O, L>(k, src, y);
    };
    scale_row::<V, A, A, W, O, L>(src, k.g, k.s.offset, y, n, r);
    r
}

/// Floats in the scratch row of [`forward_row_widened`] (32 KiB of stack; the backward's two,
/// 64 KiB). Longer rows widen twice instead.
pub(super) const SCRATCH: usize = 8192;

/// [`forward_row`] of a row `x` of a type whose widening is costly ([`Elem::WIDEN_ONCE`]): the
/// row is widened once into f32 on the stack, the sum of squares and the scaling read that.
/// The values and their order are those of the two-pass form, so the bits are too.
#[inline(always)]
unsafe fn forward_row_widened<V: F32x4, A: Elem, const W: bool, const O: bool, const L: bool>(
    k: &Forward<A>,
    x: *const A,
    y: *mut A,
) -> f32 {
    let mut buf = core::mem::MaybeUninit::<[f32; SCRATCH]>::uninit();
    let wide = buf.as_mut_ptr() as *mut f32;
    widen::<V, A>(x, wide, k.s.dim);
    let ss = sum_sq::<V, f32>(wide, k.s.stat);
    let Some(r) = fast_rstd(ss, k.s.stat, k.s.eps) else {
        return forward_row_f64::<A, W, O, L>(k, x, y);
    };
    scale_row::<V, f32, A, W, O, L>(wide, k.g, k.s.offset, y, k.s.dim, r);
    r
}

/// The forward of a row whose statistic f32 cannot hold ([`fast_rstd`]): all in f64 (from `src`, the row
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
    for i in 0..k.s.stat {
        let v = A::get(src.add(i)) as f64;
        ss += v * v;
    }
    let r = 1.0 / (ss / k.s.stat as f64 + k.s.eps as f64).sqrt();
    for i in 0..k.s.dim {
        let v = A::get(src.add(i)) as f64 * r;
        let v = if W {
            // llama: x·rstd rounded to A first (through f32: A is at most f32's precision).
            let v = if L { A::round1(v as f32) as f64 } else { v };
            v * gain1::<O>(k.g, k.s.offset, i) as f64
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
/// when `res` is, `z` when `gate` is not `None`; `1 <= stat <= dim`.
pub unsafe fn forward_with<V: F32x4, A: Elem>(k: &Forward<A>, rows: usize) {
    if k.s.gate != Gate::None {
        return gate::forward::<V, A>(k, rows);
    }
    // One function per flavour, never inlined into the dispatch: inlined, the flavours made
    // one function so large that the engine compiled the backward 10-20% slower.
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
    let l = k.s.llama && A::HALF && !k.g.is_null();
    match (k.g.is_null(), k.s.offset != 0.0, k.res.is_null(), l) {
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
