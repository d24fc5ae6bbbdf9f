//! The gated RMSNorm of Qwen3-Next (`Qwen3NextRMSNormGated`) and Mamba-2 (`RMSNormGated`):
//! `silu(z)` multiplies the normalized row ([`Gate::After`]: `y = rmsnorm(x) · g · silu(z)`)
//! or the row before its norm ([`Gate::Before`]: `y = rmsnorm(x · silu(z)) · g`).
//!
//! SiLU is `z / (1 + e^−z)`, the formula PyTorch computes, over an [`exp`] made of fixed f32
//! operations: no fused multiply-add, no table, no engine's `Math.exp`, so every build gives
//! the same bits. The element-wise math is written once, per element; the sums run in
//! [`fold_long`]'s order as every other reduction does. The casting follows the models' code:
//! without `llama` everything is f32 and rounded once at the store (Mamba-2's reference);
//! with it `x·rstd` is rounded to the activations' type before the gain (Qwen3-Next, Hugging
//! Face's Mamba-2), and with `llama_w` the gained value too (a half weight), before the gate.
//! The backward is f32 throughout, each result rounded once.

use super::args::{Backward, Forward};
use super::elems::gain_at;
use super::reduce::{backward_is_fast, fast_rstd, fold_long, rstd_f64, SUM_BLOCK};
use crate::abi::Gate;
use crate::elem::Elem;
use crate::simd::F32x4;

/// Above this `e^x` is infinite (`ln(f32::MAX)` ≈ 88.72); the math overflows there anyway,
/// the cut keeps the exponent `n` in range.
const EXP_HI: f32 = 89.0;
/// Below this `e^x` rounds to zero (the smallest subnormal is `e^−103.28`).
const EXP_LO: f32 = -104.0;
/// ln 2 in two parts (Cody and Waite): `n · LN2_HI` is exact for the `n` that occur.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// `e^r − 1 − r ≈ r² · p(r)` on `|r| ≤ ln2 / 2`: the minimax coefficients of Cephes' `expf`.
const P: [f32; 6] = [
    1.987_569_1e-4,
    1.398_199_9e-3,
    8.333_452e-3,
    4.166_579_6e-2,
    1.666_666_5e-1,
    5.000_000_1e-1,
];

/// `e^x` in f32, within 2 ulp of the exact value (tested against f64 in crate/tests): `x = n·ln2
/// + r` with `n` the nearest integer to `x·log2(e)`, a polynomial for `e^r`, and `2^n` applied in
/// two exact steps so that subnormal results round once. NaN gives NaN.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    if x > EXP_HI {
        return f32::INFINITY;
    }
    if x < EXP_LO {
        return 0.0;
    }
    let n = (x * core::f32::consts::LOG2_E).round_ties_even();
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let p = ((((P[0] * r + P[1]) * r + P[2]) * r + P[3]) * r + P[4]) * r + P[5];
    let e = (p * (r * r) + r) + 1.0;
    // n in [-150, 129] (NaN casts to 0): two powers of two in [2^-75, 2^65], both normal.
    let n = n as i32;
    let (n1, n2) = (n >> 1, n - (n >> 1));
    e * pow2(n1) * pow2(n2)
}

/// `2^n` for `n` in f32's normal exponent range.
#[inline(always)]
fn pow2(n: i32) -> f32 {
    f32::from_bits(((n + 127) as u32) << 23)
}

/// `silu(z) = z / (1 + e^−z)`. Not inlined: the sums' unrolled loops would hold a copy of
/// [`exp`] per term (about 50 KiB more per build).
#[inline(never)]
pub fn silu(z: f32) -> f32 {
    z / (1.0 + exp(-z))
}

/// `silu(z)` and its derivative `σ·(1 + z·(1 − σ))` with `σ = 1 / (1 + e^−z)`, as PyTorch's
/// `silu_backward`. Not inlined, as [`silu`].
#[inline(never)]
fn silu_and_grad(z: f32) -> (f32, f32) {
    let d = 1.0 + exp(-z);
    let s = 1.0 / d;
    (z / d, s * (1.0 + z * (1.0 - s)))
}

/// `Σ term(i)` over `n` elements in [`fold_long`]'s order: each block of [`SUM_BLOCK`] terms is
/// computed into a buffer, one element at a time, then folded (so the term's code is not
/// repeated for every lane of the unrolled fold).
#[inline(always)]
unsafe fn sum<V: F32x4>(n: usize, term: impl Fn(usize) -> f32) -> f32 {
    let mut buf = [0f32; SUM_BLOCK];
    let mut acc = 0f64;
    let mut b = 0;
    while b < n {
        let len = SUM_BLOCK.min(n - b);
        for (i, t) in buf[..len].iter_mut().enumerate() {
            *t = term(b + i);
        }
        acc += fold_f32::<V>(buf.as_ptr(), len) as f64;
        b += len;
    }
    acc as f32
}

/// [`fold_long`] of `n` floats at `p` (at most one block).
#[inline(never)]
unsafe fn fold_f32<V: F32x4>(p: *const f32, n: usize) -> f32 {
    let [s] = fold_long::<V, 1>(
        n,
        |i| [[V::load(p.add(i))], [V::load(p.add(i + 4))]],
        |i| [V::load(p.add(i))],
        |i| [*p.add(i)],
    );
    s
}

/// The row a gate's norm reads: `x`, or `x · silu(z)` before the norm.
#[inline(always)]
unsafe fn normed<A: Elem>(gate: Gate, x: *const A, z: *const A, i: usize) -> f32 {
    let v = A::get(x.add(i));
    if gate == Gate::Before {
        v * silu(A::get(z.add(i)))
    } else {
        v
    }
}

/// `y` of element `i` from its normalized value `v = h·rstd`: `v` rounded (with `llama`),
/// gained (and rounded again with `llama_w`), gated after the norm; in f32.
#[inline(always)]
unsafe fn forward_elem<A: Elem>(k: &Forward<A>, v: f32, i: usize, row_z: *const A) -> f32 {
    let l = k.s.llama && !A::F32 && !k.g.is_null();
    let v = if l { A::round1(v) } else { v };
    let t = match gain_at(k.g, &k.s, i) {
        Some(g) if l && k.s.llama_w => A::round1(v * g),
        Some(g) => v * g,
        None => v,
    };
    if k.s.gate == Gate::After {
        t * silu(A::get(row_z.add(i)))
    } else {
        t
    }
}

/// The gated forward over `rows` rows (see the module docs); [`Forward::rstd`] receives the
/// rstd of the row the norm read.
///
/// # Safety
/// As `forward_with`; `z` valid for `rows × dim`.
#[inline(never)]
pub(super) unsafe fn forward<V: F32x4, A: Elem>(k: &Forward<A>, rows: usize) {
    let n = k.s.dim;
    for row in 0..rows {
        let (x, z, y) = (k.x.add(row * n), k.z.add(row * n), k.y.add(row * n));
        let ss = sum::<V>(k.s.stat, |i| {
            let h = normed(k.s.gate, x, z, i);
            h * h
        });
        let r = match fast_rstd(ss, k.s.stat, k.s.p.eps) {
            Some(r) => {
                for i in 0..n {
                    A::put(
                        y.add(i),
                        forward_elem(k, normed(k.s.gate, x, z, i) * r, i, z),
                    );
                }
                r
            }
            None => forward_row_f64(k, x, z, y),
        };
        if !k.rstd.is_null() {
            *k.rstd.add(row) = r;
        }
    }
}

/// A row whose statistic f32 cannot hold: its sum of squares and `h·rstd` in f64, the rest as
/// the fast path. Returns rstd rounded to f32.
#[cold]
#[inline(never)]
unsafe fn forward_row_f64<A: Elem>(k: &Forward<A>, x: *const A, z: *const A, y: *mut A) -> f32 {
    let mut ss = 0f64;
    for i in 0..k.s.stat {
        let h = normed(k.s.gate, x, z, i) as f64;
        ss += h * h;
    }
    let r = rstd_f64(ss, k.s.stat, k.s.p.eps);
    for i in 0..k.s.dim {
        let v = (normed(k.s.gate, x, z, i) as f64 * r) as f32;
        A::put(y.add(i), forward_elem(k, v, i, z));
    }
    r as f32
}

/// One element of the gated backward: what rstd's gradient multiplies (`h`), the gradient
/// reaching `h·rstd·gain` before rstd (`gy`), and what else the element needs.
struct Elem3 {
    /// The row the norm read: `x`, or `x·silu(z)`.
    h: f32,
    /// `∂L/∂(h·rstd)` without rstd's own path: `dy·silu(z)·gain` (after) or `dy·gain` (before).
    gy: f32,
    /// `silu(z)` and its derivative.
    s: f32,
    ds: f32,
}

#[inline(always)]
unsafe fn backward_elem<A: Elem>(
    k: &Backward<A>,
    x: *const A,
    dy: *const A,
    z: *const A,
    i: usize,
) -> Elem3 {
    let (s, ds) = silu_and_grad(A::get(z.add(i)));
    let (xv, d) = (A::get(x.add(i)), A::get(dy.add(i)));
    let g = gain_at(k.g, &k.s, i);
    if k.s.gate == Gate::After {
        let t = d * s;
        Elem3 {
            h: xv,
            gy: g.map_or(t, |g| t * g),
            s,
            ds,
        }
    } else {
        Elem3 {
            h: xv * s,
            gy: g.map_or(d, |g| d * g),
            s,
            ds,
        }
    }
}

/// Rows `[s, e)` of the gated backward (row indices relative to `k`'s pointers), adding their
/// weight-gradient terms into `p` with a gain: the gated twin of the plain kernel's rows, with
/// the same signature so that both entry points reach it through one pointer.
///
/// After the norm (`y = t·silu(z)`, `t = h·rstd·g`): `dh` from `gy = dy·silu(z)·g` as the plain
/// backward, `dg += dy·silu(z)·h·rstd`, `dz = dy·t·silu'(z)`. Before it (`h = x·silu(z)`): `dh`
/// from `gy = dy·g`, `dx = dh·silu(z)`, `dz = dh·x·silu'(z)`, `dg += dy·h·rstd`. With `dh`:
/// `rstd·gy − [i < stat]·h·rstd³·Σgy·h / stat`.
///
/// # Safety
/// As `backward_rows`; `z` and `dz` valid for the rows.
#[inline(never)]
pub(super) unsafe fn backward_rows<V: F32x4, A: Elem>(
    k: &Backward<A>,
    s: usize,
    e: usize,
    p: *mut f32,
) {
    let n = k.s.dim;
    for row in s..e {
        let off = row * n;
        let (x, dy, z) = (k.x.add(off), k.dy.add(off), k.z.add(off));
        let c = sum::<V>(n, |i| {
            let t = backward_elem(k, x, dy, z, i);
            t.gy * t.h
        });
        let rstd = if k.rstd.is_null() {
            let ss = sum::<V>(k.s.stat, |i| {
                let h = normed(k.s.gate, x, z, i);
                h * h
            });
            fast_rstd(ss, k.s.stat, k.s.p.eps).unwrap_or(f32::NAN)
        } else {
            *k.rstd.add(row)
        };
        let b = (c / k.s.stat as f32) * rstd * (rstd * rstd);
        if !backward_is_fast(rstd, c, b) {
            backward_row_f64(k, row, p);
            continue;
        }
        for i in 0..n {
            let t = backward_elem(k, x, dy, z, i);
            let dh = if i < k.s.stat {
                rstd * t.gy - b * t.h
            } else {
                rstd * t.gy
            };
            let d = A::get(dy.add(i));
            let g = gain_at(k.g, &k.s, i);
            let normed = t.h * rstd;
            let (dx, dz) = if k.s.gate == Gate::After {
                (dh, d * g.map_or(normed, |g| normed * g) * t.ds)
            } else {
                (dh * t.s, dh * A::get(x.add(i)) * t.ds)
            };
            if g.is_some() {
                *p.add(i) += if k.s.gate == Gate::After {
                    d * t.s * normed
                } else {
                    d * normed
                };
            }
            A::put(k.dx.add(off + i), dx);
            A::put(k.dz.add(off + i), dz);
        }
    }
}

/// The gated backward of a row f32 cannot do faithfully (as the plain kernel's): the sums,
/// rstd and the terms through it in f64, each result rounded once.
#[cold]
#[inline(never)]
unsafe fn backward_row_f64<A: Elem>(k: &Backward<A>, row: usize, p: *mut f32) {
    let (n, off) = (k.s.dim, row * k.s.dim);
    let (x, dy, z) = (k.x.add(off), k.dy.add(off), k.z.add(off));
    let (mut c, mut ss) = (0f64, 0f64);
    for i in 0..n {
        let t = backward_elem(k, x, dy, z, i);
        c += t.gy as f64 * t.h as f64;
        if i < k.s.stat {
            ss += t.h as f64 * t.h as f64;
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
        let t = backward_elem(k, x, dy, z, i);
        let (h, gy) = (t.h as f64, t.gy as f64);
        let dh = rstd * gy - if i < k.s.stat { b * h } else { 0.0 };
        let d = A::get(dy.add(i)) as f64;
        let g = gain_at(k.g, &k.s, i).map(|g| g as f64);
        let normed = h * rstd;
        let (dx, dz) = if k.s.gate == Gate::After {
            (dh, d * g.map_or(normed, |g| normed * g) * t.ds as f64)
        } else {
            (dh * t.s as f64, dh * A::get(x.add(i)) as f64 * t.ds as f64)
        };
        if g.is_some() {
            *p.add(i) += (if k.s.gate == Gate::After {
                d * t.s as f64 * normed
            } else {
                d * normed
            }) as f32;
        }
        A::put(k.dx.add(off + i), dx as f32);
        A::put(k.dz.add(off + i), dz as f32);
    }
}
