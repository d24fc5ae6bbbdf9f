//! The backward of one row: `dx`, and its weight-gradient terms added into a block partial.
//!
//! With `gy = dy·(offset + g)`, `c = Σ gy·x` over the whole row and rstd from its first `stat`
//! elements: `dx_i = rstd·gy_i − [i < stat]·x_i·rstd³·c/stat (+ dh_i)` — the gradient through
//! rstd reaches only the elements it was estimated from. Two passes: one for `c` (and the sum
//! of squares when rstd is recomputed: over the whole row in the same pass, or with `stat <
//! dim` a pass over the first `stat`), one for `dx`. What differs between calls — a weight or
//! none, a saved rstd, a residual's gradient, the llama casting — is read once per call or
//! per row: no loop is compiled once per combination of them all; float16 rows are widened
//! once into f32 scratch (see forward.rs).

use super::args::Backward;
use super::elems::gain_at;
use super::reduce::rstd_f64;
use super::row_passes::{dx_row, sums, terms};
use crate::elem::{narrow, widen, Elem};
use crate::simd::F32x4;

/// The backward of rows `[s, e)` of `k` (row indices relative to its pointers), adding their
/// weight-gradient terms into `p` (with a gain): each row's sums, then its `dx`. `g`: the gain
/// row; `wide`: a float16 call's scratch rows (x, dy, dh widened).
///
/// # Safety
/// As the module's entry points (blocks.rs); `p` valid for `dim` floats with a gain.
pub(super) unsafe fn plain_rows<V: F32x4, A: Elem>(
    k: &Backward<A>,
    g: *const f32,
    wide: [*mut f32; 3],
    s: usize,
    e: usize,
    p: *mut f32,
) {
    let (w, d) = (!k.g.is_null(), !k.dh.is_null());
    let l = k.s.llama && !A::F32 && w;
    // The `dx` loop compiled for each of these choices, made once per call: with the three
    // read per element, the f32 backward of rows in cache ran 6-11% slower and the bfloat16
    // one up to 2× slower (bench/ab-builds.mjs, 64×4096, 2048×768, 1×896).
    match (w, d, l) {
        (false, false, _) => rows_go::<V, A, false, false, false>(k, g, wide, s, e, p),
        (false, true, _) => rows_go::<V, A, false, true, false>(k, g, wide, s, e, p),
        (true, false, false) => rows_go::<V, A, true, false, false>(k, g, wide, s, e, p),
        (true, true, false) => rows_go::<V, A, true, true, false>(k, g, wide, s, e, p),
        (true, false, true) => rows_go::<V, A, true, false, true>(k, g, wide, s, e, p),
        (true, true, true) => rows_go::<V, A, true, true, true>(k, g, wide, s, e, p),
    }
}

#[inline(never)]
unsafe fn rows_go<V: F32x4, A: Elem, const W: bool, const D: bool, const L: bool>(
    k: &Backward<A>,
    g: *const f32,
    wide: [*mut f32; 3],
    s: usize,
    e: usize,
    p: *mut f32,
) {
    for row in s..e {
        if A::WIDEN_ONCE {
            row_widened::<V, A, W, D, L>(k, g, wide, row, p)
        } else {
            backward_row::<V, A, W, D, L>(k, g, row, p)
        }
    }
}

/// Backward of row `row` read as stored; with a gain, adds `dy · x · rstd` into the block partial `p`.
#[inline(always)]
unsafe fn backward_row<V: F32x4, A: Elem, const W: bool, const D: bool, const L: bool>(
    k: &Backward<A>,
    g: *const f32,
    row: usize,
    p: *mut f32,
) {
    let n = k.s.dim;
    let off = row * n;
    let (dy, x) = (k.dy.add(off), k.x.add(off));
    let (c, ss) = sums::<V, A, A, L>(dy, x, g, n, k.s.stat, !k.rstd.is_null());
    let Some(t) = terms(k, row, c, ss, L) else {
        return backward_row_f64(k, row, p);
    };
    let dh = if D { k.dh.add(off) } else { k.dh };
    dx_row::<V, A, A, A, W, D, L>(dy, x, dh, g, k.dx.add(off), p, n, k.s.stat, t);
}

/// [`backward_row`] of a type whose widening is costly: the row's `x` and `dy` (and the
/// residual's gradient) widened once into f32 scratch (`wide`), which both passes read, `dx`
/// formed in place over the widened `dy` and rounded into the output.
#[inline(always)]
unsafe fn row_widened<V: F32x4, A: Elem, const W: bool, const D: bool, const L: bool>(
    k: &Backward<A>,
    g: *const f32,
    wide: [*mut f32; 3],
    row: usize,
    p: *mut f32,
) {
    let n = k.s.dim;
    let off = row * n;
    let [wx, wd, wh] = wide;
    widen::<V, A>(k.x.add(off), wx, n);
    widen::<V, A>(k.dy.add(off), wd, n);
    let (c, ss) = sums::<V, f32, A, L>(wd, wx, g, n, k.s.stat, !k.rstd.is_null());
    let Some(t) = terms(k, row, c, ss, L) else {
        return backward_row_f64(k, row, p);
    };
    if D {
        widen::<V, A>(k.dh.add(off), wh, n);
    }
    // In place over the widened dy: each element's dy is read before its dx is written.
    dx_row::<V, f32, f32, A, W, D, L>(wd, wx, wh, g, wd, p, n, k.s.stat, t);
    narrow::<V, A>(wd, k.dx.add(off), n, false);
}

/// The backward of a row f32 cannot do faithfully: all in f64, each result rounded once to
/// f32 (then to `A`).
#[cold]
#[inline(never)]
unsafe fn backward_row_f64<A: Elem>(k: &Backward<A>, row: usize, p: *mut f32) {
    let n = k.s.dim;
    let off = row * n;
    let (dy, x, dx, g) = (k.dy.add(off), k.x.add(off), k.dx.add(off), k.g);
    let llama = k.s.llama && !A::F32 && !g.is_null();
    let gy = |i: usize| {
        let d = A::get(dy.add(i)) as f64;
        match gain_at(g, &k.s, i) {
            None => d,
            Some(w) if llama => A::round1((d * w as f64) as f32) as f64,
            Some(w) => d * w as f64,
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
    let rstd = if k.rstd.is_null() {
        rstd_f64(ss, k.s.stat, k.s.p.eps)
    } else {
        *k.rstd.add(row) as f64
    };
    let b = rstd * rstd * rstd * (c / stat);
    for i in 0..n {
        let xv = A::get(x.add(i)) as f64;
        let gyv = gy(i);
        if !g.is_null() {
            let xa = if llama {
                A::round1((xv * rstd) as f32) as f64
            } else {
                xv * rstd
            };
            let t = (A::get(dy.add(i)) as f64 * xa) as f32;
            *p.add(i) += if llama && k.s.llama_w {
                A::round1(t)
            } else {
                t
            };
        }
        let v = rstd * gyv - if i < k.s.stat { b * xv } else { 0.0 };
        A::put(
            dx.add(i),
            (if k.dh.is_null() {
                v
            } else {
                v + A::get(k.dh.add(off + i)) as f64
            }) as f32,
        );
    }
}
