//! The float16 rows' loops for SIMD128: the conversions of `wasm32_half.rs` with their
//! constants loaded once for a row, and a shorter widening where a stretch of the row allows.

use super::wasm32_half::{
    k, load4_f16, load8_f16_with, store4_f16, store8_f16_not_nan_with, store8_slow, Narrow16, Widen16,
};
use core::arch::wasm32::*;

/// Eight at a time as [`crate::simd::F32x4::load8_f16`] with its constants loaded once for the row (in
/// the loop V8 loads each anew, about a third of the conversion's instructions), then
/// four, then one.
#[inline(always)]
pub(super) unsafe fn widen_f16(src: *const u16, dst: *mut f32, n: usize) {
    let c = Widen16::new();
    let z = u16x8_splat(0);
    let (keep, scale) = (k::<0x8fff_ffff>(), k::<{ (127 + 112) << 23 }>());
    // The half in each lane's high half (x86: punpcklwd / punpckhwd with zero), moved
    // three bits down by an arithmetic shift whose copies of the sign are cleared, times
    // 2^112 (which rebiases the exponent exactly): four operations per four lanes, where
    // the formula for every case takes thirteen — for normal numbers and zeros. A
    // subnormal would be a subnormal f32 times 2^112, which x86 runs through a microcode
    // assist, and an Inf or NaN would not be one.
    let short = |h: v128| f32x4_mul(v128_and(i32x4_shr(h, 3), keep), scale);
    let mut i = 0;
    // In stretches of SEG halves, asked first whether the stretch holds an Inf or NaN
    // (|h| above the largest finite half) or a subnormal (0 < |h| < 0x400: |h| − 1,
    // wrapping at 0, below 0x3ff): the short formula when it holds neither, else every
    // block of the stretch by the full one. In a row of values of every size (a
    // subnormal half is below 6.1e-5) most stretches hold neither; the test is two
    // operations a block, and the loop that widens has no call in it.
    const SEG: usize = 64;
    while i + SEG <= n {
        let (mut big, mut small) = (z, u16x8_splat(0xffff));
        for j in (0..SEG).step_by(8) {
            let em = v128_and(v128_load(src.add(i + j) as *const v128), c.em16);
            big = v128_or(big, i16x8_gt(em, c.max16));
            small = u16x8_min(small, i16x8_sub(em, c.one16));
        }
        if !v128_any_true(v128_or(big, u16x8_lt(small, c.sub16))) {
            for j in (0..SEG).step_by(8) {
                let v = v128_load(src.add(i + j) as *const v128);
                v128_store(
                    dst.add(i + j) as *mut v128,
                    short(i16x8_shuffle::<0, 8, 1, 9, 2, 10, 3, 11>(z, v)),
                );
                v128_store(
                    dst.add(i + j + 4) as *mut v128,
                    short(i16x8_shuffle::<4, 12, 5, 13, 6, 14, 7, 15>(z, v)),
                );
            }
        } else {
            widen8_f16(src.add(i), dst.add(i), SEG, &c);
        }
        i += SEG;
    }
    widen8_f16(src.add(i), dst.add(i), (n - i) & !7, &c);
    i = n & !7;
    while i + 4 <= n {
        v128_store(dst.add(i) as *mut v128, load4_f16(src.add(i)));
        i += 4;
    }
    while i < n {
        *dst.add(i) = crate::half_bits::f16_to_f32(*src.add(i));
        i += 1;
    }
}

/// Eight at a time as [`crate::simd::F32x4::store8_f16`] (or its form without NaN) with its constants
/// loaded once, as [`crate::simd::F32x4::widen_f16`], then four, then one.
#[inline(always)]
pub(super) unsafe fn narrow_f16(src: *const f32, dst: *mut u16, n: usize, not_nan: bool) {
    let c = Narrow16::new();
    let mut i = 0;
    // Without NaN, a loop with no call in it (see widen_f16).
    if not_nan {
        while i + 8 <= n {
            let (a, b) = (
                v128_load(src.add(i) as *const v128),
                v128_load(src.add(i + 4) as *const v128),
            );
            store8_f16_not_nan_with(a, b, dst.add(i), &c);
            i += 8;
        }
    }
    while i + 8 <= n {
        let (a, b) = (
            v128_load(src.add(i) as *const v128),
            v128_load(src.add(i + 4) as *const v128),
        );
        if v128_any_true(v128_or(f32x4_ne(a, a), f32x4_ne(b, b))) {
            store8_slow([a, b], dst.add(i), store4_f16);
        } else {
            store8_f16_not_nan_with(a, b, dst.add(i), &c);
        }
        i += 8;
    }
    while i + 4 <= n {
        store4_f16(v128_load(src.add(i) as *const v128), dst.add(i));
        i += 4;
    }
    while i < n {
        *dst.add(i) = crate::half_bits::f32_to_f16(*src.add(i));
        i += 1;
    }
}

/// Widens `n` halves (a multiple of 8) at `src` into `dst` by the full formula, eight at a time.
#[inline(never)]
unsafe fn widen8_f16(src: *const u16, dst: *mut f32, n: usize, c: &Widen16) {
    for i in (0..n).step_by(8) {
        let [a, b] = load8_f16_with(src.add(i), c);
        v128_store(dst.add(i) as *mut v128, a);
        v128_store(dst.add(i + 4) as *mut v128, b);
    }
}
