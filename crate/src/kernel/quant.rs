//! The forward with a quantized output, as inference engines fuse it before an int8 or float8
//! matrix multiply (vLLM's `rms_norm_dynamic_per_token_quant`, `rms_norm_static_fp8_quant`).
//!
//! The rows are normalized by the plain forward ([`forward_with`], every variant: the fused
//! residual add, a gate, the casting modes) into scratch, a block of rows at a time, as the
//! activations' type — the `y` a call without quantization returns, bit for bit — and each
//! row is then quantized from it: the scale, `max|y| / qmax` (NaN ignored; at least f32's
//! smallest normal, 2^-126, unless 0) or the static one; `inv = 1 / scale` once per row (0
//! for a scale of 0: a row of zeros gives zeros); `q = y · inv` rounded to nearest even,
//! clamped to the type's range ([`crate::quant_bits`] defines the codes: int8's NaN becomes
//! 0; float8 E4M3FN's values are clamped to ±448 before the cast, as vLLM does where a plain
//! cast would give NaN, and NaN stays NaN, `0x7f`). Reusing the forward keeps one copy of
//! its rows in the module, not a second one per storage type and variant.

use super::args::Forward;
use super::elems::{Buffer, NoMemory, Row, STACK_ROW};
use super::forward::forward_with;
use crate::abi::Dtype;
use crate::elem::{widen, Elem};
use crate::quant_bits::{to_e4m3, to_i8};
use crate::simd::F32x4;
use core::mem::size_of;

/// Where a quantized forward's output goes and how it is scaled.
#[derive(Clone, Copy, Debug)]
pub struct Quant {
    /// The output, `rows × dim` bytes: int8 values, or float8 E4M3FN bit patterns.
    pub out: *mut u8,
    /// One scale per row (`rows` f32), written when `scale` is 0; else may be null.
    pub scales: *mut f32,
    /// The type's largest magnitude: 127 (int8) or 448 (float8 E4M3FN).
    pub qmax: f32,
    /// The static scale of every row, or 0: one per row, `max|y| / qmax`.
    pub scale: f32,
    /// The output's storage: an `abi::Dtype` code whose `DTYPES` row has a `qmax` (the entry
    /// points admit no other), which picks the encoder below.
    pub code: u32,
}

/// The forward of `rows` rows of `k` (its `y` unused) with the output quantized as `q` says.
/// Err only when scratch for a long row cannot be allocated.
///
/// # Safety
/// As [`forward_with`], with `q.out` valid for `rows × dim` bytes and `q.scales` for `rows`
/// floats when `q.scale` is 0.
pub unsafe fn forward_quant<V: F32x4, A: Elem>(
    k: &Forward<A>,
    q: &Quant,
    rows: usize,
) -> Result<(), NoMemory> {
    let n = k.s.dim;
    // Rows per block: as many as 32 KiB of scratch holds, at least one.
    let per = (STACK_ROW * 4 / (n * size_of::<A>())).max(1);
    let (mut yb, mut wb): (Buffer, Buffer) = (Buffer::uninit(), Buffer::uninit());
    let ys = Row::new((per * n * size_of::<A>()).div_ceil(4), &mut yb)?;
    // A row of another type than f32 widened for the quantization.
    let wide = Row::new(if A::F32 { 0 } else { n }, &mut wb)?;
    let mut r0 = 0;
    while r0 < rows {
        let m = per.min(rows - r0);
        // The block's rows of every operand; its y in scratch.
        let kb = Forward {
            y: ys.ptr() as *mut A,
            ..k.from(r0)
        };
        forward_with::<V, A>(&kb, m)?;
        for i in 0..m {
            let y = (ys.ptr() as *const A).add(i * n);
            let y = if A::F32 {
                y as *const f32
            } else {
                widen::<V, A>(y, wide.ptr(), n);
                wide.ptr() as *const f32
            };
            quantize_row::<V>(q, r0 + i, y, n);
        }
        r0 += m;
    }
    Ok(())
}

/// Row `r` of the output from its f32 values `y` (`n`): its scale (written when per row), then
/// the codes, 16 at a time. One copy for every storage type and variant of the rows before it.
#[inline(never)]
unsafe fn quantize_row<V: F32x4>(q: &Quant, r: usize, y: *const f32, n: usize) {
    let scale = if q.scale != 0.0 {
        q.scale
    } else {
        // A scale below f32's smallest normal (max|y| under ~1e-36) is raised to it: its
        // reciprocal would overflow to inf, saturating every code and making 0 · inf NaN.
        let s = max_abs::<V>(y, n) / q.qmax;
        let s = if s != 0.0 && s < f32::MIN_POSITIVE {
            f32::MIN_POSITIVE
        } else {
            s
        };
        *q.scales.add(r) = s;
        s
    };
    let inv = if scale == 0.0 { 0.0 } else { 1.0 / scale };
    let (out, vinv) = (q.out.add(r * n), V::splat(inv));
    let sixteen = |i: usize| [0, 4, 8, 12].map(|k| V::load(y.add(i + k)).mul(vinv));
    let mut i = 0;
    if q.code == Dtype::Float8_e4m3 as u32 {
        while i + 16 <= n {
            V::store16_e4m3(sixteen(i), out.add(i));
            i += 16;
        }
        for i in i..n {
            *out.add(i) = to_e4m3(*y.add(i) * inv);
        }
    } else {
        while i + 16 <= n {
            V::store16_i8(sixteen(i), out.add(i));
            i += 16;
        }
        for i in i..n {
            *out.add(i) = to_i8(*y.add(i) * inv) as u8;
        }
    }
}

/// The largest `|y[i]|` of `n` floats, NaN ignored (0 for a row of NaN): `pmax`, whose NaN
/// handling is fixed (a float `max` may become relaxed SIMD's on the relaxed builds, whose NaN
/// handling the engine chooses).
#[inline(always)]
unsafe fn max_abs<V: F32x4>(y: *const f32, n: usize) -> f32 {
    let mut m = [V::zero(); 4];
    let mut i = 0;
    while i + 16 <= n {
        for (k, m) in m.iter_mut().enumerate() {
            *m = m.pmax(V::load(y.add(i + 4 * k)).abs());
        }
        i += 16;
    }
    let mut top = 0f32;
    for v in m[0].pmax(m[1]).pmax(m[2].pmax(m[3])).lanes() {
        top = if top < v { v } else { top };
    }
    for i in i..n {
        let a = f32::from_bits((*y.add(i)).to_bits() & 0x7fff_ffff);
        top = if top < a { a } else { top };
    }
    top
}
