//! The forward: `y = h · rstd · (offset + g)` with `h = x (+ res)`.
//!
//! Per row, two passes: the sum of squares over the first `stat` elements (with a residual,
//! forming and writing `h = x + res` over the whole row in the same pass), then the scaling,
//! which reads the row again while it is still in cache. What differs between calls — a
//! weight or none, Gemma's offset, a residual, the llama casting — is read once per call or
//! per row and picks among a few loops (or changes the gain row they read): no loop is
//! compiled once per combination. float16 rows, whose widening costs about 4× the rest of a
//! pass, are widened once into f32 scratch and every pass reads that.

use super::args::Forward;
use super::elems::{all_finite, gain_at, scale, Buffer, Gain, NoMemory, Row, NOT_NAN_ROWS};
use super::gate;
use super::reduce::{add_sum_sq_into, fast_rstd, rstd_f64, sum_sq_into};
use crate::abi::Gate;
use crate::elem::{narrow, widen, Elem};
use crate::simd::F32x4;
use core::ptr::null_mut;

/// RMSNorm forward over `rows` rows: `y = h · rstd · (offset + g)` with `h = x (+ res)` and
/// `rstd = 1/sqrt(Σ_{i<stat} h_i² / stat + eps)`. See [`Forward`] for what may be null and
/// what may alias. Err only when a row too long for the stack's scratch (its gain, or a
/// float16 row widened) cannot be allocated.
///
/// # Safety
/// Every non-null pointer must be valid for its shape (see the module docs); `h` non-null
/// when `res` is, `z` when `gate` is not `None`; `1 <= stat <= dim`.
pub unsafe fn forward_with<V: F32x4, A: Elem>(k: &Forward<A>, rows: usize) -> Result<(), NoMemory> {
    if k.s.gate != Gate::None {
        gate::forward::<V, A>(k, rows);
        return Ok(());
    }
    let n = k.s.dim;
    let mut gb: Buffer = Buffer::uninit();
    let gain = Gain::new(k.g, &k.s, n, &mut gb)?;
    // Scratch for a float16 row widened (and its residual).
    let (mut xb, mut rb): (Buffer, Buffer) = (Buffer::uninit(), Buffer::uninit());
    let wide = if A::WIDEN_ONCE {
        Some((
            Row::new(n, &mut xb)?,
            Row::new(if k.res.is_null() { 0 } else { n }, &mut rb)?,
        ))
    } else {
        None
    };
    let (wx, wr) = wide
        .as_ref()
        .map_or((null_mut(), null_mut()), |(x, r)| (x.ptr(), r.ptr()));
    // llama differs only for a type narrower than f32, with a gain. The rows' loops compiled for each of
    // these choices, made once per call: with both sums and both scalings in one function the
    // bfloat16 forward ran 7-9% slower (bench/ab-builds.mjs).
    let llama = k.s.llama && !A::F32 && !k.g.is_null();
    let g = gain.ptr();
    // Whether a row with a finite rstd has no NaN result (elems.rs NOT_NAN_ROWS): its statistic
    // saw every element finite, and the gain is.
    let finite = !A::F32 && rows >= NOT_NAN_ROWS && k.s.stat == n && all_finite::<V>(g, n);
    match (k.res.is_null(), llama) {
        (true, false) => rows_go::<V, A, false, false>(k, rows, g, wx, wr, finite),
        (false, false) => rows_go::<V, A, true, false>(k, rows, g, wx, wr, finite),
        (true, true) => rows_go::<V, A, false, true>(k, rows, g, wx, wr, finite),
        (false, true) => rows_go::<V, A, true, true>(k, rows, g, wx, wr, finite),
    }
    Ok(())
}

#[inline(never)]
unsafe fn rows_go<V: F32x4, A: Elem, const RES: bool, const L: bool>(
    k: &Forward<A>,
    rows: usize,
    g: *const f32,
    wx: *mut f32,
    wr: *mut f32,
    finite: bool,
) {
    for r in 0..rows {
        let rs = if A::WIDEN_ONCE {
            row_widened::<V, A, RES, L>(k, r, g, wx, wr, finite)
        } else {
            row::<V, A, RES, L>(k, r, g, finite)
        };
        if !k.rstd.is_null() {
            *k.rstd.add(r) = rs;
        }
    }
}

/// The forward of row `r` read as stored (with a residual `RES`, the llama casting `L`, the
/// gain row `g`; `finite`: the gain is finite and the statistic covers the row); returns its rstd.
#[inline(always)]
unsafe fn row<V: F32x4, A: Elem, const RES: bool, const L: bool>(
    k: &Forward<A>,
    r: usize,
    g: *const f32,
    finite: bool,
) -> f32 {
    let n = k.s.dim;
    let off = r * n;
    let mut acc = [0f64; 1];
    let src = if !RES {
        sum_sq_into::<V, A>(&mut acc, k.x.add(off), k.s.stat);
        k.x.add(off)
    } else {
        let h = k.h.add(off);
        add_sum_sq_into::<V, A, A, A>(&mut acc, k.x.add(off), k.res.add(off), h, n, k.s.stat);
        h as *const A
    };
    let Some(rs) = fast_rstd(acc[0] as f32, k.s.stat, k.s.p.eps) else {
        return row_f64(k, src, k.y.add(off));
    };
    scale::<V, A, A, A, L>(src, g, k.y.add(off), n, rs, finite && rs.is_finite());
    rs
}

/// The forward of row `r` of a type whose widening is costly ([`Elem::WIDEN_ONCE`]): the row
/// widened once into f32 scratch `wx` (with a residual, `res` into `wr` too, and their sum,
/// rounded to the type, written to `h` and kept in `wx`), the sum of squares and the scaling
/// read that, the results are rounded into `y` from it. The values and their order are those
/// of the passes over the row as stored, so the bits are too.
#[inline(always)]
unsafe fn row_widened<V: F32x4, A: Elem, const RES: bool, const L: bool>(
    k: &Forward<A>,
    r: usize,
    g: *const f32,
    wx: *mut f32,
    wr: *mut f32,
    finite: bool,
) -> f32 {
    let n = k.s.dim;
    let off = r * n;
    let mut acc = [0f64; 1];
    widen::<V, A>(k.x.add(off), wx, n);
    let src = if RES {
        let h = k.h.add(off);
        widen::<V, A>(k.res.add(off), wr, n);
        add_sum_sq_into::<V, f32, A, f32>(&mut acc, wx, wr, wx, n, k.s.stat);
        narrow::<V, A>(wx, h, n, false);
        h as *const A
    } else {
        sum_sq_into::<V, f32>(&mut acc, wx, k.s.stat);
        k.x.add(off)
    };
    let Some(rs) = fast_rstd(acc[0] as f32, k.s.stat, k.s.p.eps) else {
        return row_f64(k, src, k.y.add(off));
    };
    scale::<V, f32, f32, A, L>(wx, g, wx, n, rs, false);
    narrow::<V, A>(wx, k.y.add(off), n, finite && rs.is_finite());
    rs
}

/// The forward of a row whose statistic f32 cannot hold ([`fast_rstd`]): all in f64 (from `src`, the row
/// or its `h`). The returned rstd is rounded to f32 and saturates to inf for rows whose rms is
/// below f32's range.
#[cold]
#[inline(never)]
unsafe fn row_f64<A: Elem>(k: &Forward<A>, src: *const A, y: *mut A) -> f32 {
    let mut ss = 0f64;
    for i in 0..k.s.stat {
        let v = A::get(src.add(i)) as f64;
        ss += v * v;
    }
    let r = rstd_f64(ss, k.s.stat, k.s.p.eps);
    let llama = k.s.llama && !A::F32;
    for i in 0..k.s.dim {
        let v = A::get(src.add(i)) as f64 * r;
        let v = match gain_at(k.g, &k.s, i) {
            None => v,
            // llama: x·rstd rounded to A first (through f32: A is at most f32's precision).
            Some(g) => (if llama { A::round1(v as f32) as f64 } else { v }) * g as f64,
        };
        // f64 → f32 → A rounds twice; a half's value is then within one of its ulps.
        A::put(y.add(i), v as f32);
    }
    r as f32
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
) -> Result<(), NoMemory> {
    forward_with::<V, f32>(&Forward::plain(x, g, y, rstd_out, dim, eps), rows)
}
