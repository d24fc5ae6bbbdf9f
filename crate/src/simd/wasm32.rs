//! SIMD128 implementation of [`F32x4`]: thin wrappers over `core::arch::wasm32`.

use super::F32x4;
use core::arch::wasm32::*;

/// One `v128` holding four f32 lanes.
#[derive(Clone, Copy)]
pub struct V128(v128);

impl F32x4 for V128 {
    #[inline(always)]
    fn zero() -> Self {
        V128(f32x4_splat(0.0))
    }
    #[inline(always)]
    fn splat(v: f32) -> Self {
        V128(f32x4_splat(v))
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        V128(v128_load(p as *const v128))
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        v128_store(p as *mut v128, self.0)
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        V128(f32x4_add(self.0, o.0))
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        V128(f32x4_sub(self.0, o.0))
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        V128(f32x4_mul(self.0, o.0))
    }
    #[inline(always)]
    fn abs(self) -> Self {
        V128(f32x4_abs(self.0))
    }
    #[inline(always)]
    fn pmax(self, o: Self) -> Self {
        V128(f32x4_pmax(self.0, o.0))
    }
    /// As the default, in v128 operations: nearest, then `pmin` / `pmax`, then the saturating
    /// truncation, NaN lanes zeroed, narrowed twice with saturation.
    #[inline(always)]
    unsafe fn store16_i8(v: [Self; 4], p: *mut u8) {
        let (lo, hi) = (f32x4_splat(-127.0), f32x4_splat(127.0));
        // NaN lanes are zeroed by their own mask: on the relaxed builds LLVM may turn the
        // truncation of a clamped value into relaxed SIMD's, whose NaN result is the engine's.
        let c = |x: Self| {
            let t = i32x4_trunc_sat_f32x4(f32x4_pmax(f32x4_pmin(f32x4_nearest(x.0), hi), lo));
            v128_andnot(t, f32x4_ne(x.0, x.0))
        };
        let a = i16x8_narrow_i32x4(c(v[0]), c(v[1]));
        let b = i16x8_narrow_i32x4(c(v[2]), c(v[3]));
        v128_store(p as *mut v128, i8x16_narrow_i16x8(a, b));
    }
    /// As the default (`quant_bits::to_e4m3`), lane-wise on the bits: both the subnormal code
    /// (`|v| · 2^9` rounded) and the normal one (the mantissa rounded to 3 bits by an integer
    /// add, the exponent rebiased) are formed and one picked; NaN lanes get `0x7f`.
    #[inline(always)]
    unsafe fn store16_e4m3(v: [Self; 4], p: *mut u8) {
        let e = |x: Self| -> v128 {
            let c = f32x4_pmax(f32x4_pmin(x.0, f32x4_splat(448.0)), f32x4_splat(-448.0));
            let sign = v128_and(u32x4_shr(c, 24), u32x4_splat(0x80));
            let abs = v128_and(c, u32x4_splat(0x7fff_ffff));
            let sub = i32x4_trunc_sat_f32x4(f32x4_nearest(f32x4_mul(abs, f32x4_splat(512.0))));
            let odd = v128_and(u32x4_shr(abs, 20), u32x4_splat(1));
            let r = u32x4_shr(i32x4_add(i32x4_add(abs, u32x4_splat(0x7_ffff)), odd), 20);
            let normal = i32x4_sub(r, u32x4_splat(120 << 3));
            let small = f32x4_lt(abs, f32x4_splat(0.015625));
            let code = v128_or(v128_bitselect(sub, normal, small), sign);
            v128_bitselect(u32x4_splat(0x7f), code, f32x4_ne(x.0, x.0))
        };
        let a = u16x8_narrow_i32x4(e(v[0]), e(v[1]));
        let b = u16x8_narrow_i32x4(e(v[2]), e(v[3]));
        v128_store(p as *mut v128, u8x16_narrow_i16x8(a, b));
    }
    #[inline(always)]
    fn lanes(self) -> [f32; 4] {
        let v = self.0;
        [
            f32x4_extract_lane::<0>(v),
            f32x4_extract_lane::<1>(v),
            f32x4_extract_lane::<2>(v),
            f32x4_extract_lane::<3>(v),
        ]
    }
    #[inline(always)]
    fn from_lanes(l: [f32; 4]) -> Self {
        V128(f32x4(l[0], l[1], l[2], l[3]))
    }
    #[inline(always)]
    unsafe fn load_bf16(p: *const u16) -> Self {
        V128(i32x4_shl(load4_u16(p), 16))
    }
    #[inline(always)]
    unsafe fn store_bf16(self, p: *mut u16) {
        store4_u16(p, to_bf16_bits(self.0))
    }
    #[inline(always)]
    unsafe fn load_f16(p: *const u16) -> Self {
        V128(f16_bits_to_f32(load4_u16(p)))
    }
    #[inline(always)]
    unsafe fn store_f16(self, p: *mut u16) {
        store4_u16(p, to_f16_bits(self.0))
    }
    #[inline(always)]
    unsafe fn load8_bf16(p: *const u16) -> [Self; 2] {
        // One 16-byte load; interleaving zero words below each half gives `bits << 16`
        // (x86: punpcklwd / punpckhwd, one instruction per four lanes).
        let v = v128_load(p as *const v128);
        let z = u16x8_splat(0);
        [
            V128(i16x8_shuffle::<0, 8, 1, 9, 2, 10, 3, 11>(z, v)),
            V128(i16x8_shuffle::<4, 12, 5, 13, 6, 14, 7, 15>(z, v)),
        ]
    }
    #[inline(always)]
    unsafe fn store8_bf16(v: [Self; 2], p: *mut u16) {
        let (a, b) = (v[0].0, v[1].0);
        // A NaN needs its own rule (the rounding add could carry into its exponent or sign);
        // outputs are almost never NaN, so one test per eight lanes sends those to the
        // four-lane path, and the rest round with four integer ops per four lanes.
        if v128_any_true(v128_or(f32x4_ne(a, a), f32x4_ne(b, b))) {
            return store8_slow(v, p, Self::store_bf16);
        }
        Self::store8_bf16_not_nan(v, p)
    }
    #[inline(always)]
    unsafe fn store8_bf16_not_nan(v: [Self; 2], p: *mut u16) {
        // The high halves of the eight rounded lanes, in order (x86: psrld + packusdw).
        v128_store(
            p as *mut v128,
            i16x8_shuffle::<1, 3, 5, 7, 9, 11, 13, 15>(
                bf16_round_not_nan(v[0].0),
                bf16_round_not_nan(v[1].0),
            ),
        );
    }
    #[inline(always)]
    unsafe fn load8_f16(p: *const u16) -> [Self; 2] {
        load8_f16_with(p, &Widen16::new())
    }
    #[inline(always)]
    unsafe fn store8_f16(v: [Self; 2], p: *mut u16) {
        let (a, b) = (v[0].0, v[1].0);
        if v128_any_true(v128_or(f32x4_ne(a, a), f32x4_ne(b, b))) {
            return store8_slow(v, p, Self::store_f16);
        }
        Self::store8_f16_not_nan(v, p)
    }
    #[inline(always)]
    unsafe fn store8_f16_not_nan(v: [Self; 2], p: *mut u16) {
        let c = Narrow16::new();
        v128_store(
            p as *mut v128,
            u16x8_narrow_i32x4(to_f16_bits_not_nan_with(v[0].0, &c), to_f16_bits_not_nan_with(v[1].0, &c)),
        );
    }
    /// Eight at a time as [`F32x4::load8_f16`] with its constants loaded once for the row (in
    /// the loop V8 loads each anew, about a third of the conversion's instructions), then
    /// four, then one.
    #[inline(always)]
    unsafe fn widen_f16(src: *const u16, dst: *mut f32, n: usize) {
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
                    v128_store(dst.add(i + j) as *mut v128, short(i16x8_shuffle::<0, 8, 1, 9, 2, 10, 3, 11>(z, v)));
                    v128_store(dst.add(i + j + 4) as *mut v128, short(i16x8_shuffle::<4, 12, 5, 13, 6, 14, 7, 15>(z, v)));
                }
            } else {
                widen8_f16(src.add(i), dst.add(i), SEG, &c);
            }
            i += SEG;
        }
        widen8_f16(src.add(i), dst.add(i), (n - i) & !7, &c);
        i = n & !7;
        while i + 4 <= n {
            Self::load_f16(src.add(i)).store(dst.add(i));
            i += 4;
        }
        while i < n {
            *dst.add(i) = crate::half_bits::f16_to_f32(*src.add(i));
            i += 1;
        }
    }
    /// Eight at a time as [`F32x4::store8_f16`] (or its form without NaN) with its constants
    /// loaded once, as [`F32x4::widen_f16`], then four, then one.
    #[inline(always)]
    unsafe fn narrow_f16(src: *const f32, dst: *mut u16, n: usize, not_nan: bool) {
        let c = Narrow16::new();
        let mut i = 0;
        // Without NaN, a loop with no call in it (see widen_f16).
        if not_nan {
            while i + 8 <= n {
                let (a, b) = (v128_load(src.add(i) as *const v128), v128_load(src.add(i + 4) as *const v128));
                v128_store(
                    dst.add(i) as *mut v128,
                    u16x8_narrow_i32x4(to_f16_bits_not_nan_with(a, &c), to_f16_bits_not_nan_with(b, &c)),
                );
                i += 8;
            }
        }
        while i + 8 <= n {
            let (a, b) = (v128_load(src.add(i) as *const v128), v128_load(src.add(i + 4) as *const v128));
            if v128_any_true(v128_or(f32x4_ne(a, a), f32x4_ne(b, b))) {
                store8_slow([V128(a), V128(b)], dst.add(i), Self::store_f16);
            } else {
                v128_store(
                    dst.add(i) as *mut v128,
                    u16x8_narrow_i32x4(to_f16_bits_not_nan_with(a, &c), to_f16_bits_not_nan_with(b, &c)),
                );
            }
            i += 8;
        }
        while i + 4 <= n {
            V128::load(src.add(i)).store_f16(dst.add(i));
            i += 4;
        }
        while i < n {
            *dst.add(i) = crate::half_bits::f32_to_f16(*src.add(i));
            i += 1;
        }
    }
    #[inline(always)]
    fn round_bf16(self) -> Self {
        V128(i32x4_shl(to_bf16_bits(self.0), 16))
    }
    #[inline(always)]
    fn round_f16(self) -> Self {
        V128(f16_bits_to_f32(to_f16_bits(self.0)))
    }
    #[inline(always)]
    fn hsum(self) -> f32 {
        let v = self.0;
        (f32x4_extract_lane::<0>(v) + f32x4_extract_lane::<1>(v))
            + (f32x4_extract_lane::<2>(v) + f32x4_extract_lane::<3>(v))
    }
}

/// `a` where `mask` is set, else `b`, for a `mask` whose lanes are all ones or all zeros (a
/// comparison's result). With relaxed SIMD this is `relaxed_laneselect`, one instruction on
/// x86 (`blendvps`) where `bitselect` takes three; the spec defines its result for such masks,
/// so both give the same bits.
#[inline(always)]
fn select(a: v128, b: v128, mask: v128) -> v128 {
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
fn k<const C: u32>() -> v128 {
    const fn lanes<const C: u32>() -> &'static [u32; 4] {
        &[C; 4]
    }
    // SAFETY: a promoted constant: 16 readable bytes, u32-aligned (v128 loads need none).
    unsafe { core::ptr::read_volatile(lanes::<C>() as *const [u32; 4] as *const v128) }
}

// The half conversions of `crate::half_bits`, four lanes at a time with integer ops and selects
// (every branch computed, the right one kept), so they give the scalar functions' bits.

/// Eight lanes with a NaN among them, stored four at a time by `store4` (kept out of the
/// loops that call [`F32x4::store8_bf16`]).
#[cold]
#[inline(never)]
unsafe fn store8_slow(v: [V128; 2], p: *mut u16, store4: unsafe fn(V128, *mut u16)) {
    store4(v[0], p);
    store4(v[1], p.add(4));
}

/// Eight lanes with an Inf or NaN among them, loaded four at a time by `load4`.
#[cold]
#[inline(never)]
unsafe fn load8_slow(p: *const u16, load4: unsafe fn(*const u16) -> V128) -> [V128; 2] {
    [load4(p), load4(p.add(4))]
}

/// Four u16 at `p` zero-extended into u32 lanes.
#[inline(always)]
unsafe fn load4_u16(p: *const u16) -> v128 {
    u32x4_extend_low_u16x8(v128_load64_zero(p as *const u64))
}

/// The low 16 bits of four u32 lanes (each at most 0xffff) stored at `p`.
#[inline(always)]
unsafe fn store4_u16(p: *mut u16, bits: v128) {
    v128_store64_lane::<0>(u16x8_narrow_i32x4(bits, bits), p as *mut u64)
}

/// f32 lanes to bfloat16 bits in u32 lanes: `half::f32_to_bf16`.
#[inline(always)]
fn to_bf16_bits(v: v128) -> v128 {
    let quiet = v128_or(u32x4_shr(v, 16), k::<0x0040>());
    select(quiet, u32x4_shr(bf16_round_not_nan(v), 16), f32x4_ne(v, v))
}

/// Lanes that are not NaN rounded to bfloat16 precision, nearest even, the bfloat16 bits in
/// each lane's high half: adding 0x7fff plus the lowest kept bit (`half::f32_to_bf16`).
#[inline(always)]
fn bf16_round_not_nan(v: v128) -> v128 {
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
fn f16_bits_to_f32(h: v128) -> v128 {
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
fn f16_finite_to_f32(h: v128) -> v128 {
    f16_finite_to_f32_with(h, &Widen16::new())
}

/// The constants of the float16 widening ([`k`]), loaded once where a loop uses them.
#[derive(Clone, Copy)]
struct Widen16 {
    /// `0x7fff` in each u16 lane, and the largest finite half's magnitude: the Inf/NaN test.
    em16: v128,
    max16: v128,
    /// 1 and the smallest normal half less one in each u16 lane: the subnormal test.
    one16: v128,
    sub16: v128,
    /// `0x7fff` in each u32 lane; the exponent rebias; the smallest normal half; 2^-24.
    em: v128,
    rebias: v128,
    normal: v128,
    sub_scale: v128,
}

impl Widen16 {
    #[inline(always)]
    fn new() -> Self {
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
fn f16_finite_to_f32_with(h: v128, c: &Widen16) -> v128 {
    let em = v128_and(h, c.em);
    let sign = i32x4_shl(v128_xor(h, em), 16);
    let normal = i32x4_add(i32x4_shl(em, 13), c.rebias);
    let sub = f32x4_mul(f32x4_convert_i32x4(em), c.sub_scale);
    v128_or(select(sub, normal, i32x4_lt(em, c.normal)), sign)
}

/// Widens `n` halves (a multiple of 8) at `src` into `dst` by the full formula, eight at a time.
#[inline(never)]
unsafe fn widen8_f16(src: *const u16, dst: *mut f32, n: usize, c: &Widen16) {
    for i in (0..n).step_by(8) {
        let [a, b] = load8_f16_with(src.add(i), c);
        a.store(dst.add(i));
        b.store(dst.add(i + 4));
    }
}

/// [`F32x4::load8_f16`] with its constants given.
#[inline(always)]
unsafe fn load8_f16_with(p: *const u16, c: &Widen16) -> [V128; 2] {
    let v = v128_load(p as *const v128);
    // Inf/NaN halves (exponent all ones) take the four-lane path; the rest widen without
    // that case. (Lanes as i16: |h| ≤ 0x7fff is non-negative.)
    if v128_any_true(i16x8_gt(v128_and(v, c.em16), c.max16)) {
        return load8_slow(p, V128::load_f16);
    }
    // Zero words above each half: the u32 lanes (x86: punpcklwd / punpckhwd).
    let z = u16x8_splat(0);
    [
        V128(f16_finite_to_f32_with(i16x8_shuffle::<0, 8, 1, 9, 2, 10, 3, 11>(v, z), c)),
        V128(f16_finite_to_f32_with(i16x8_shuffle::<4, 12, 5, 13, 6, 14, 7, 15>(v, z), c)),
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
fn to_f16_bits_not_nan(v: v128) -> v128 {
    to_f16_bits_not_nan_with(v, &Narrow16::new())
}

/// The constants of the float16 rounding ([`k`]), loaded once where a loop uses them.
#[derive(Clone, Copy)]
struct Narrow16 {
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
    fn new() -> Self {
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

/// [`to_f16_bits_not_nan`] with its constants given.
#[inline(always)]
fn to_f16_bits_not_nan_with(v: v128, k: &Narrow16) -> v128 {
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
fn to_f16_bits(v: v128) -> v128 {
    let a = v128_and(v, k::<0x7fff_ffff>());
    let nan = v128_or(
        v128_or(k::<0x7e00>(), v128_and(u32x4_shr(a, 13), k::<0x3ff>())),
        u32x4_shr(v128_xor(v, a), 16),
    );
    select(nan, to_f16_bits_not_nan(v), i32x4_gt(a, k::<0x7f80_0000>()))
}
