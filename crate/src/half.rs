//! Half-precision storage: bfloat16 and IEEE binary16 (float16) held as `u16` bit patterns,
//! widened to f32 on load and rounded back on store; all arithmetic stays f32.
//!
//! The scalar conversions here are the definitions: [`crate::simd::F32x4`]'s vector loads and
//! stores must give the same bits for every input (they are exact or correctly rounded, so
//! there is one right answer — only NaNs leave a choice, fixed here):
//! - widening is exact: bf16 → f32 is a shift (a NaN keeps its bits); f16 → f32 moves a NaN's
//!   payload up and sets the quiet bit (as x86's F16C and Rust's `half` crate do).
//! - narrowing rounds to nearest, ties to even; overflow gives ±Inf; a NaN gives a quiet NaN
//!   of the same sign keeping the top of its payload: bf16 is the f32's top 16 bits with the
//!   quiet bit (0x0040) set, f16 is `sign | 0x7e00 | mantissa >> 13`.

use crate::simd::F32x4;

/// bfloat16 bits to f32: the top half of an f32.
#[inline(always)]
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// f32 to bfloat16 bits, round to nearest even.
#[inline(always)]
pub fn f32_to_bf16(v: f32) -> u16 {
    let b = v.to_bits();
    if v.is_nan() {
        return ((b >> 16) | 0x0040) as u16;
    }
    // Adding 0x7fff plus the lowest kept bit rounds the dropped half to nearest, ties to even;
    // a carry out of the mantissa bumps the exponent (up to Inf), as rounding should.
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// float16 bits to f32 (exact; subnormals, ±Inf and NaN payloads included).
#[inline(always)]
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let em = (h & 0x7fff) as u32;
    let v = if em >= 0x7c00 {
        // Inf / NaN: all-ones exponent, the mantissa moved up, a NaN made quiet.
        (em << 13) | 0x7f80_0000 | if em > 0x7c00 { 0x0040_0000 } else { 0 }
    } else if em >= 0x0400 {
        // Normal: the exponent rebiased (15 → 127) by an integer add.
        (em << 13) + ((127 - 15) << 23)
    } else {
        // Subnormal (or zero): m·2^-24, formed as the normal f32 2^-14·(1 + m/1024) minus
        // 2^-14 — exact, and with no subnormal operand (x86 takes a slow assist on those).
        (f32::from_bits((em << 13) + ((127 - 14) << 23)) - f32::from_bits((127 - 14) << 23)).to_bits()
    };
    f32::from_bits(v | sign)
}

/// f32 to float16 bits, round to nearest even (subnormal results, overflow to Inf).
#[inline(always)]
pub fn f32_to_f16(v: f32) -> u16 {
    let b = v.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let a = b & 0x7fff_ffff;
    let r = if a > 0x7f80_0000 {
        0x7e00 | ((a >> 13) & 0x3ff) as u16 // NaN: quiet, the payload's top bits
    } else if a >= 0x4780_0000 {
        0x7c00 // |v| ≥ 65536 (Inf included): past the largest finite half's rounding range
    } else if a < 0x3880_0000 {
        // |v| < 2^-14: a subnormal or zero half. Adding 0.5 (2^-1) puts the half's 10 bits
        // (units of 2^-24) at the bottom of an f32 mantissa, and that addition rounds them
        // to nearest even as IEEE f32 addition does.
        let m = f32::from_bits(a) + 0.5;
        (m.to_bits() - 0x3f00_0000) as u16
    } else {
        // Normal: rebias the exponent, then round the 13 dropped bits to nearest even (a
        // carry out of the mantissa bumps the exponent, up to Inf at 65520).
        let odd = (a >> 13) & 1;
        ((a - ((127 - 15) << 23) + 0xfff + odd) >> 13) as u16
    };
    r | sign
}

/// An element type the kernels store rows in: f32, or a half type widened on load.
pub trait Elem: Copy + 'static {
    /// Loads 4 elements at `p`, widened to f32.
    ///
    /// # Safety
    /// `p..p+4` readable.
    unsafe fn load<V: F32x4>(p: *const Self) -> V;
    /// Stores 4 lanes at `p`, rounded to this type.
    ///
    /// # Safety
    /// `p..p+4` writable.
    unsafe fn store<V: F32x4>(p: *mut Self, v: V);
    /// Eight elements at `p` as two vectors (`p[0..4]`, `p[4..8]`): the bits of two
    /// [`Elem::load`], in one wider load where the vector type has one.
    ///
    /// # Safety
    /// `p..p+8` must be readable.
    #[inline(always)]
    unsafe fn load8<V: F32x4>(p: *const Self) -> [V; 2] {
        [Self::load(p), Self::load(p.add(4))]
    }
    /// `v[0]` and `v[1]` stored at `p..p+8`: the bits of two [`Elem::store`].
    ///
    /// # Safety
    /// `p..p+8` must be writable.
    #[inline(always)]
    unsafe fn store8<V: F32x4>(p: *mut Self, v: [V; 2]) {
        Self::store(p, v[0]);
        Self::store(p.add(4), v[1]);
    }
    /// Loads one element.
    ///
    /// # Safety
    /// `p` readable.
    unsafe fn get(p: *const Self) -> f32;
    /// Stores one element, rounded.
    ///
    /// # Safety
    /// `p` writable.
    unsafe fn put(p: *mut Self, v: f32);
    /// Each lane rounded to this type and widened back (identity for f32): the intermediate
    /// rounding of the `llama` casting mode.
    fn round<V: F32x4>(v: V) -> V;
    /// One element rounded to this type and widened back.
    fn round1(v: f32) -> f32;
}

impl Elem for f32 {
    #[inline(always)]
    unsafe fn load<V: F32x4>(p: *const Self) -> V {
        V::load(p)
    }
    #[inline(always)]
    unsafe fn store<V: F32x4>(p: *mut Self, v: V) {
        v.store(p)
    }
    #[inline(always)]
    unsafe fn get(p: *const Self) -> f32 {
        *p
    }
    #[inline(always)]
    unsafe fn put(p: *mut Self, v: f32) {
        *p = v
    }
    #[inline(always)]
    fn round<V: F32x4>(v: V) -> V {
        v
    }
    #[inline(always)]
    fn round1(v: f32) -> f32 {
        v
    }
}

/// bfloat16 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Bf16(pub u16);

/// IEEE binary16 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct F16(pub u16);

impl Elem for Bf16 {
    #[inline(always)]
    unsafe fn load<V: F32x4>(p: *const Self) -> V {
        V::load_bf16(p as *const u16)
    }
    #[inline(always)]
    unsafe fn store<V: F32x4>(p: *mut Self, v: V) {
        v.store_bf16(p as *mut u16)
    }
    #[inline(always)]
    unsafe fn load8<V: F32x4>(p: *const Self) -> [V; 2] {
        V::load8_bf16(p as *const u16)
    }
    #[inline(always)]
    unsafe fn store8<V: F32x4>(p: *mut Self, v: [V; 2]) {
        V::store8_bf16(v, p as *mut u16)
    }
    #[inline(always)]
    unsafe fn get(p: *const Self) -> f32 {
        bf16_to_f32((*p).0)
    }
    #[inline(always)]
    unsafe fn put(p: *mut Self, v: f32) {
        *p = Bf16(f32_to_bf16(v))
    }
    #[inline(always)]
    fn round<V: F32x4>(v: V) -> V {
        v.round_bf16()
    }
    #[inline(always)]
    fn round1(v: f32) -> f32 {
        bf16_to_f32(f32_to_bf16(v))
    }
}

impl Elem for F16 {
    #[inline(always)]
    unsafe fn load<V: F32x4>(p: *const Self) -> V {
        V::load_f16(p as *const u16)
    }
    #[inline(always)]
    unsafe fn store<V: F32x4>(p: *mut Self, v: V) {
        v.store_f16(p as *mut u16)
    }
    #[inline(always)]
    unsafe fn load8<V: F32x4>(p: *const Self) -> [V; 2] {
        V::load8_f16(p as *const u16)
    }
    #[inline(always)]
    unsafe fn store8<V: F32x4>(p: *mut Self, v: [V; 2]) {
        V::store8_f16(v, p as *mut u16)
    }
    #[inline(always)]
    unsafe fn get(p: *const Self) -> f32 {
        f16_to_f32((*p).0)
    }
    #[inline(always)]
    unsafe fn put(p: *mut Self, v: f32) {
        *p = F16(f32_to_f16(v))
    }
    #[inline(always)]
    fn round<V: F32x4>(v: V) -> V {
        v.round_f16()
    }
    #[inline(always)]
    fn round1(v: f32) -> f32 {
        f16_to_f32(f32_to_f16(v))
    }
}

/// Widens `n` elements at `src` into f32 at `dst` (no overlap).
///
/// # Safety
/// `src` readable and `dst` writable for `n` elements.
pub unsafe fn widen<V: F32x4, A: Elem>(src: *const A, dst: *mut f32, n: usize) {
    let mut i = 0;
    // Eight at a time, as the kernels' main loops load (so the tests that convert every bit
    // pattern through here check those loads too), then four, then one.
    while i + 8 <= n {
        let [a, b] = A::load8::<V>(src.add(i));
        a.store(dst.add(i));
        b.store(dst.add(i + 4));
        i += 8;
    }
    while i + 4 <= n {
        A::load::<V>(src.add(i)).store(dst.add(i));
        i += 4;
    }
    while i < n {
        *dst.add(i) = A::get(src.add(i));
        i += 1;
    }
}

/// Rounds `n` f32 at `src` into elements at `dst` (no overlap).
///
/// # Safety
/// `src` readable and `dst` writable for `n` elements.
pub unsafe fn narrow<V: F32x4, A: Elem>(src: *const f32, dst: *mut A, n: usize) {
    let mut i = 0;
    while i + 8 <= n {
        A::store8::<V>(dst.add(i), [V::load(src.add(i)), V::load(src.add(i + 4))]);
        i += 8;
    }
    while i + 4 <= n {
        A::store::<V>(dst.add(i), V::load(src.add(i)));
        i += 4;
    }
    while i < n {
        A::put(dst.add(i), *src.add(i));
        i += 1;
    }
}
