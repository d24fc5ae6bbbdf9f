//! The half conversions of [`crate::simd::F32x4`] for SIMD128 (`crate::half_bits` defines their bits): four
//! lanes at a time with integer ops and selects (every branch computed, the right one kept);
//! the constants of a loop's conversions can be loaded once ([`Widen16`], [`Narrow16`]).

use core::arch::wasm32::*;

/// Eight lanes with a NaN among them, stored four at a time by `store4` (kept out of the
/// loops that call [`crate::simd::F32x4::store8_bf16`]).
#[cold]
#[inline(never)]
pub(super) unsafe fn store8_slow(v: [v128; 2], p: *mut u16, store4: unsafe fn(v128, *mut u16)) {
    store4(v[0], p);
    store4(v[1], p.add(4));
}

/// Eight lanes with an Inf or NaN among them, loaded four at a time by `load4`.
#[cold]
#[inline(never)]
unsafe fn load8_slow(p: *const u16, load4: unsafe fn(*const u16) -> v128) -> [v128; 2] {
    [load4(p), load4(p.add(4))]
}

/// Four halves at `p` widened by the formula for every case ([`F32x4::load_f16`](crate::simd::F32x4::load_f16)).
#[inline(always)]
pub(super) unsafe fn load4_f16(p: *const u16) -> v128 {
    f16_bits_to_f32(load4_u16(p))
}

/// Four lanes rounded to float16 and stored at `p` ([`F32x4::store_f16`](crate::simd::F32x4::store_f16)).
#[inline(always)]
pub(super) unsafe fn store4_f16(v: v128, p: *mut u16) {
    store4_u16(p, to_f16_bits(v))
}

/// Four lanes rounded to bfloat16 and stored at `p` ([`F32x4::store_bf16`](crate::simd::F32x4::store_bf16)).
#[inline(always)]
pub(super) unsafe fn store4_bf16(v: v128, p: *mut u16) {
    store4_u16(p, to_bf16_bits(v))
}

/// Four u16 at `p` zero-extended into u32 lanes.
#[inline(always)]
pub(super) unsafe fn load4_u16(p: *const u16) -> v128 {
    u32x4_extend_low_u16x8(v128_load64_zero(p as *const u64))
}

/// The low 16 bits of four u32 lanes (each at most 0xffff) stored at `p`.
#[inline(always)]
pub(super) unsafe fn store4_u16(p: *mut u16, bits: v128) {
    v128_store64_lane::<0>(u16x8_narrow_i32x4(bits, bits), p as *mut u64)
}

/// f32 lanes to bfloat16 bits in u32 lanes: `half::f32_to_bf16`.
#[inline(always)]
pub(super) fn to_bf16_bits(v: v128) -> v128 {
    let quiet = v128_or(u32x4_shr(v, 16), k::<0x0040>());
    select(quiet, u32x4_shr(bf16_round_not_nan(v), 16), f32x4_ne(v, v))
}

/// Lanes that are not NaN rounded to bfloat16 precision, nearest even, the bfloat16 bits in
/// each lane's high half: adding 0x7fff plus the lowest kept bit (`half::f32_to_bf16`).
#[inline(always)]
pub(super) fn bf16_round_not_nan(v: v128) -> v128 {
    i32x4_add(
        i32x4_add(v, k::<0x7fff>()),
        v128_and(u32x4_shr(v, 16), k::<1>()),
    )
}

/// float16 bits in u32 lanes to f32 lanes: `half::f16_to_f32`.
///
/// Normal halves: the exponent and mantissa moved to an f32's place and rebiased by an integer
/// add; Inf/NaN then given an all-ones exponent (and a NaN its quiet bit). Subnormal halves:
/// the mantissa converted to f32 and scaled by 2^-24, both exact and with normal operands —
/// moving them as bits and scaling by 2^112 would feed subnormal f32s to the multiply, which
/// x86 runs through a microcode assist (~100 cycles): 4× slower on rows of small values.
#[inline(always)]
pub(super) fn f16_bits_to_f32(h: v128) -> v128 {
    // An Inf/NaN half comes out of the normal path with exponent 143 (31 rebiased), whose
    // bits the all-ones exponent ORed in covers.
    let em = v128_and(h, k::<0x7fff>());
    let inf_nan = v128_and(i32x4_gt(em, k::<0x7bff>()), k::<0x7f80_0000>());
    let quiet = v128_and(i32x4_gt(em, k::<0x7c00>()), k::<0x0040_0000>());
    v128_or(f16_finite_to_f32(h), v128_or(inf_nan, quiet))
}

/// [`f16_bits_to_f32`] of lanes that are not Inf or NaN (exponent below all ones); on those it
/// gives the normal formula's bits, which [`f16_bits_to_f32`] completes.
#[inline(always)]
pub(super) fn f16_finite_to_f32(h: v128) -> v128 {
    f16_finite_to_f32_with(h, &Widen16::new())
}

/// The constants of the float16 widening ([`k`]), loaded once where a loop uses them.
#[derive(Clone, Copy)]
pub(super) struct Widen16 {
    /// `0x7fff` in each u16 lane, and the largest finite half's magnitude: the Inf/NaN test.
    pub(super) em16: v128,
    pub(super) max16: v128,
    /// 1 and the smallest normal half less one in each u16 lane: the subnormal test.
    pub(super) one16: v128,
    pub(super) sub16: v128,
    /// `0x7fff` in each u32 lane; the exponent rebias; the smallest normal half; 2^-24.
    em: v128,
    rebias: v128,
    normal: v128,
    sub_scale: v128,
}

impl Widen16 {
    #[inline(always)]
    pub(super) fn new() -> Self {
        Widen16 {
            em16: k::<0x7fff_7fff>(),
            max16: k::<0x7bff_7bff>(),
            one16: k::<0x0001_0001>(),
            sub16: k::<0x03ff_03ff>(),
            em: k::<0x7fff>(),
            rebias: k::<{ (127 - 15) << 23 }>(),
            normal: k::<0x0400>(),
            sub_scale: k::<{ (127 - 24) << 23 }>(),
        }
    }
}

/// [`f16_finite_to_f32`] with its constants given.
#[inline(always)]
pub(super) fn f16_finite_to_f32_with(h: v128, c: &Widen16) -> v128 {
    let em = v128_and(h, c.em);
    let sign = i32x4_shl(v128_xor(h, em), 16);
    let normal = i32x4_add(i32x4_shl(em, 13), c.rebias);
    let sub = f32x4_mul(f32x4_convert_i32x4(em), c.sub_scale);
    v128_or(select(sub, normal, i32x4_lt(em, c.normal)), sign)
}

/// [`crate::simd::F32x4::load8_f16`] with its constants given.
#[inline(always)]
pub(super) unsafe fn load8_f16_with(p: *const u16, c: &Widen16) -> [v128; 2] {
    let v = v128_load(p as *const v128);
    // Inf/NaN halves (exponent all ones) take the four-lane path; the rest widen without
    // that case. (Lanes as i16: |h| ≤ 0x7fff is non-negative.)
    if v128_any_true(i16x8_gt(v128_and(v, c.em16), c.max16)) {
        return load8_slow(p, load4_f16);
    }
    // Zero words above each half: the u32 lanes (x86: punpcklwd / punpckhwd).
    let z = u16x8_splat(0);
    [
        f16_finite_to_f32_with(i16x8_shuffle::<0, 8, 1, 9, 2, 10, 3, 11>(v, z), c),
        f16_finite_to_f32_with(i16x8_shuffle::<4, 12, 5, 13, 6, 14, 7, 15>(v, z), c),
    ]
}

/// [`to_f16_bits`] of lanes that are not NaN, with fewer selects. With `a = |v|` and `c` the
/// f32 whose ulp is a half's ulp at `a`'s exponent (`2^(e+13)`, at least `2^-1`, below which
/// half ulps stop shrinking), `s = a + c` rounds `a` to the half's precision (nearest even,
/// IEEE f32 addition) and `s − c` is that rounded value:
/// - normal: rebias its bits (`>> 13`, minus 112 << 10); at or past 65536 (Inf included)
///   that is ≥ 0x7c00, clamped to Inf by a min;
/// - subnormal (`a < 2^-14`, `c = 2^-1`): the half's bits are those of `s` minus those of
///   `2^-1`, at most 0x400; the normal formula gives no more than that there, and at least
///   0x400 for normal halves, so one max picks the right one.
///
/// Checked against NumPy's float16 cast for every non-negative f32 from 0 to Inf.
#[inline(always)]
pub(super) fn to_f16_bits_not_nan(v: v128) -> v128 {
    to_f16_bits_not_nan_with(v, &Narrow16::new())
}

/// The constants of the float16 rounding ([`k`]), loaded once where a loop uses them.
#[derive(Clone, Copy)]
pub(super) struct Narrow16 {
    /// `0x7fff_ffff`: the magnitude; the exponent; 13 in the exponent; 2^-1; the rebias; Inf; the smallest normal half.
    abs: v128,
    exp: v128,
    ulp: v128,
    half: v128,
    rebias: v128,
    inf: v128,
    normal: v128,
}

impl Narrow16 {
    #[inline(always)]
    pub(super) fn new() -> Self {
        Narrow16 {
            abs: k::<0x7fff_ffff>(),
            exp: k::<0x7f80_0000>(),
            ulp: k::<{ 13 << 23 }>(),
            half: k::<0x3f00_0000>(),
            rebias: k::<{ (127 - 15) << 10 }>(),
            inf: k::<0x7c00>(),
            normal: k::<0x400>(),
        }
    }
}

/// Eight lanes that are not NaN rounded to float16 and stored at `p`, the constants given.
#[inline(always)]
pub(super) unsafe fn store8_f16_not_nan_with(a: v128, b: v128, p: *mut u16, c: &Narrow16) {
    v128_store(
        p as *mut v128,
        u16x8_narrow_i32x4(to_f16_bits_not_nan_with(a, c), to_f16_bits_not_nan_with(b, c)),
    );
}

/// [`to_f16_bits_not_nan`] with its constants given.
#[inline(always)]
pub(super) fn to_f16_bits_not_nan_with(v: v128, k: &Narrow16) -> v128 {
    let a = v128_and(v, k.abs);
    let sign = u32x4_shr(v128_xor(v, a), 16);
    // Past |v| ≥ 2^114 the exponent add wraps negative and the max gives 2^-1: then `s − c`
    // is `a` itself, far past 0x7c00, so still Inf.
    let c = i32x4_max(i32x4_add(v128_and(a, k.exp), k.ulp), k.half);
    let s = f32x4_add(a, c);
    let normal = i32x4_min(i32x4_sub(u32x4_shr(f32x4_sub(s, c), 13), k.rebias), k.inf);
    let sub = i32x4_min(i32x4_sub(s, k.half), k.normal);
    v128_or(i32x4_max(normal, sub), sign)
}

/// f32 lanes to float16 bits in u32 lanes: `half::f32_to_f16` — [`to_f16_bits_not_nan`], with
/// NaN lanes given `sign | 0x7e00 | mantissa >> 13`.
#[inline(always)]
pub(super) fn to_f16_bits(v: v128) -> v128 {
    let a = v128_and(v, k::<0x7fff_ffff>());
    let nan = v128_or(
        v128_or(k::<0x7e00>(), v128_and(u32x4_shr(a, 13), k::<0x3ff>())),
        u32x4_shr(v128_xor(v, a), 16),
    );
    select(nan, to_f16_bits_not_nan(v), i32x4_gt(a, k::<0x7f80_0000>()))
}

/// `a` where `mask` is set, else `b`, for a `mask` whose lanes are all ones or all zeros (a
/// comparison's result). With relaxed SIMD this is `relaxed_laneselect`, one instruction on
/// x86 (`blendvps`) where `bitselect` takes three; the spec defines its result for such masks,
/// so both give the same bits.
#[inline(always)]
pub(super) fn select(a: v128, b: v128, mask: v128) -> v128 {
    #[cfg(target_feature = "relaxed-simd")]
    {
        i32x4_relaxed_laneselect(a, b, mask)
    }
    #[cfg(not(target_feature = "relaxed-simd"))]
    {
        v128_bitselect(a, b, mask)
    }
}

/// `C` in every u32 lane, loaded from memory. A `v128.const` is what LLVM would emit, and V8
/// (11 to 15) builds it anew in every loop iteration with three instructions (a 64-bit
/// immediate, a move, an unpack) where one load does; the conversions below use up to eight.
/// The volatile read keeps LLVM from folding the load back into a constant.
#[inline(always)]
pub(super) fn k<const C: u32>() -> v128 {
    const fn lanes<const C: u32>() -> &'static [u32; 4] {
        &[C; 4]
    }
    // SAFETY: a promoted constant: 16 readable bytes, u32-aligned (v128 loads need none).
    unsafe { core::ptr::read_volatile(lanes::<C>() as *const [u32; 4] as *const v128) }
}
