//! Element-wise pieces of a row's passes: the gain (with Gemma's offset), `gy = dy · gain`,
//! the residual add and the forward's scaling.

use crate::elem::Elem;
use crate::simd::F32x4;

/// `gy = dy·gain` of lanes `i..i+4` (dy without a gain). With `L` (the `llama` casting mode)
/// rounded to the activations' type `A`, as autograd rounds the gradient of `weight · y_half`.
/// `dy` is stored as `X`: `A`, or f32 holding `A`'s values (a row widened once).
#[inline(always)]
pub(super) unsafe fn gy_of<
    V: F32x4,
    X: Elem,
    A: Elem,
    const W: bool,
    const O: bool,
    const L: bool,
>(
    dy: *const X,
    g: *const f32,
    ov: V,
    i: usize,
) -> V {
    gy_from::<V, A, W, O, L>(X::load::<V>(dy.add(i)), g, ov, i)
}

/// [`gy_of`] of `d`, the already loaded dy of lanes `i..i+4`.
#[inline(always)]
pub(super) unsafe fn gy_from<V: F32x4, A: Elem, const W: bool, const O: bool, const L: bool>(
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
pub(super) unsafe fn gy1_of<X: Elem, A: Elem, const W: bool, const O: bool, const L: bool>(
    dy: *const X,
    g: *const f32,
    offset: f32,
    i: usize,
) -> f32 {
    let d = X::get(dy.add(i));
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
pub(super) unsafe fn gain<V: F32x4, const O: bool>(g: *const f32, ov: V, i: usize) -> V {
    let w = V::load(g.add(i));
    if O {
        ov.add(w)
    } else {
        w
    }
}

/// The gain of element `i`, as [`gain`].
#[inline(always)]
pub(super) unsafe fn gain1<const O: bool>(g: *const f32, offset: f32, i: usize) -> f32 {
    if O {
        offset + *g.add(i)
    } else {
        *g.add(i)
    }
}

/// `h = x + res` over `n` elements (lane-wise; `h` may equal `x` or `res`).
#[inline(always)]
pub(super) unsafe fn add_rows<V: F32x4, A: Elem>(x: *const A, res: *const A, h: *mut A, n: usize) {
    let mut i = 0;
    while i + 4 <= n {
        A::store::<V>(
            h.add(i),
            A::load::<V>(x.add(i)).add(A::load::<V>(res.add(i))),
        );
        i += 4;
    }
    while i < n {
        A::put(h.add(i), A::get(x.add(i)) + A::get(res.add(i)));
        i += 1;
    }
}

/// `y = (x · r) · g` (or `x · r` without gain; `g` is `offset + g` with `O`), `x` read as `X`
/// (the activations' type `A`, or f32 from a widened scratch copy of the row) and `y` stored as `A`.
///
/// A second pass over the row, which is still in L1/L2 from the first (other orders that were
/// measured and not kept: docs/performance.md, "Kernel designs measured and not kept").
///
/// With `L` (the `llama` casting mode) `x · r` is rounded to the activations' type before the
/// gain multiplies it, as Hugging Face's LlamaRMSNorm does (`weight * h.to(input_dtype)`).
#[inline(always)]
pub(super) unsafe fn scale_row<
    V: F32x4,
    X: Elem,
    A: Elem,
    const W: bool,
    const O: bool,
    const L: bool,
>(
    x: *const X,
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
        let [x0, x1] = X::load8::<V>(x.add(i));
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
        A::store::<V>(y.add(i), scale(X::load::<V>(x.add(i)), i));
        i += 4;
    }
    while i < n {
        let v = X::get(x.add(i)) * r;
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
