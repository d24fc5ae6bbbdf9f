//! The element types rows are stored in: f32, and the half types bfloat16 and IEEE binary16
//! (float16) held as `u16` bit patterns, widened to f32 on load and rounded back on store; all
//! arithmetic stays f32. The scalar conversions that define the half types' bits are in
//! [`crate::half_bits`]; [`widen`] and [`narrow`] convert whole arrays.

pub use crate::half_bits::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
use crate::simd::F32x4;
/// An element type the kernels store rows in: f32, or a half type widened on load.
pub trait Elem: Copy + 'static {
    /// Whether this is f32 itself: rows read as stored need no widening, and an intermediate
    /// rounding of the `llama` casting mode is the identity (every other type is widened to f32
    /// on load and rounded on store, whatever its width). `abi::DTYPES`' `half` states the
    /// opposite per storage code; a test keeps the two agreeing.
    const F32: bool = false;
    /// Whether the kernels widen each row of this type once into an f32 scratch row and run
    /// every pass over that, rounding the results into the output: worth it where widening
    /// costs far more than a store and a load of the f32 (float16's exponent rebias and
    /// subnormal case, about 4× the instructions of the rest of a pass), and then every loop
    /// is the f32 one; not for bfloat16, whose widening is one unpack.
    const WIDEN_ONCE: bool = false;
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
    /// [`Elem::store8`] of lanes known not to be NaN (the caller's proof): the same bits, where
    /// a type's rounding has a case for NaN, without its test.
    ///
    /// # Safety
    /// `p..p+8` must be writable.
    #[inline(always)]
    unsafe fn store8_not_nan<V: F32x4>(p: *mut Self, v: [V; 2]) {
        Self::store8(p, v)
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
    /// [`widen`]'s loop for this type: eight at a time, then four, then one.
    ///
    /// # Safety
    /// `src` readable and `dst` writable for `n` elements.
    #[inline(always)]
    unsafe fn widen_row<V: F32x4>(src: *const Self, dst: *mut f32, n: usize) {
        let mut i = 0;
        // Eight at a time, as the kernels' main loops load (so the tests that convert every bit
        // pattern through here check those loads too), then four, then one.
        while i + 8 <= n {
            let [a, b] = Self::load8::<V>(src.add(i));
            a.store(dst.add(i));
            b.store(dst.add(i + 4));
            i += 8;
        }
        while i + 4 <= n {
            Self::load::<V>(src.add(i)).store(dst.add(i));
            i += 4;
        }
        while i < n {
            *dst.add(i) = Self::get(src.add(i));
            i += 1;
        }
    }
    /// [`narrow`]'s loop for this type (`not_nan`: no value is NaN).
    ///
    /// # Safety
    /// `src` readable and `dst` writable for `n` elements.
    #[inline(always)]
    unsafe fn narrow_row<V: F32x4>(src: *const f32, dst: *mut Self, n: usize, not_nan: bool) {
        let mut i = 0;
        let eight = |i: usize| [V::load(src.add(i)), V::load(src.add(i + 4))];
        if not_nan {
            while i + 8 <= n {
                Self::store8_not_nan::<V>(dst.add(i), eight(i));
                i += 8;
            }
        }
        while i + 8 <= n {
            Self::store8::<V>(dst.add(i), eight(i));
            i += 8;
        }
        while i + 4 <= n {
            Self::store::<V>(dst.add(i), V::load(src.add(i)));
            i += 4;
        }
        while i < n {
            Self::put(dst.add(i), *src.add(i));
            i += 1;
        }
    }
    /// Each lane rounded to this type and widened back (identity for f32): the intermediate
    /// rounding of the `llama` casting mode.
    fn round<V: F32x4>(v: V) -> V;
    /// One element rounded to this type and widened back.
    fn round1(v: f32) -> f32;
}

impl Elem for f32 {
    const F32: bool = true;
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
    unsafe fn store8_not_nan<V: F32x4>(p: *mut Self, v: [V; 2]) {
        V::store8_bf16_not_nan(v, p as *mut u16)
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
    const WIDEN_ONCE: bool = true;
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
    unsafe fn store8_not_nan<V: F32x4>(p: *mut Self, v: [V; 2]) {
        V::store8_f16_not_nan(v, p as *mut u16)
    }
    #[inline(always)]
    unsafe fn widen_row<V: F32x4>(src: *const Self, dst: *mut f32, n: usize) {
        V::widen_f16(src as *const u16, dst, n)
    }
    #[inline(always)]
    unsafe fn narrow_row<V: F32x4>(src: *const f32, dst: *mut Self, n: usize, not_nan: bool) {
        V::narrow_f16(src, dst as *mut u16, n, not_nan)
    }
    #[inline(always)]
    unsafe fn get(p: *const Self) -> f32 {
        f16_to_f32((*p).0)
    }
    #[inline(always)]
    unsafe fn put(p: *mut Self, v: f32) {
        *p = F16(f32_to_f16(v))
    }
    // Out of line: only the llama casting of float16 rounds in a loop, and inlined its ~40
    // instructions went into every lane of every unrolled loop that may round (about 40 KiB).
    #[inline(never)]
    fn round<V: F32x4>(v: V) -> V {
        v.round_f16()
    }
    #[inline(always)]
    fn round1(v: f32) -> f32 {
        f16_to_f32(f32_to_f16(v))
    }
}

/// The storage types [`by_dtype!`] has an arm for. A storage row added to `abi::DTYPES` without
/// its arm fails to compile here, instead of reaching the f32 arm and being read as 4-byte
/// elements.
const ARMS: usize = 3;
const _: () = assert!(
    crate::abi::storage_dtypes() == ARMS,
    "by_dtype! needs an arm for every storage dtype of abi::DTYPES"
);

/// Calls `$f::<A>($args)` with `A` the [`Elem`] of the storage code in `$dt`'s low bits (an
/// `abi::Dtype`; checked before: any other code is f32). The one place a code meets its type;
/// the entry points (wasm32 only) use it.
#[cfg_attr(not(target_arch = "wasm32"), allow(unused_macros))]
macro_rules! by_dtype {
    ($dt:expr, $f:ident($($arg:expr),*)) => {
        match $dt & $crate::abi::DTYPE_MASK {
            c if c == $crate::abi::Dtype::Float16 as u32 => $f::<$crate::elem::F16>($($arg),*),
            c if c == $crate::abi::Dtype::Bfloat16 as u32 => $f::<$crate::elem::Bf16>($($arg),*),
            _ => $f::<f32>($($arg),*),
        }
    };
}
#[cfg(target_arch = "wasm32")]
pub(crate) use by_dtype;

/// Widens `n` elements at `src` into f32 at `dst` (no overlap).
///
/// # Safety
/// `src` readable and `dst` writable for `n` elements.
#[inline(never)]
pub unsafe fn widen<V: F32x4, A: Elem>(src: *const A, dst: *mut f32, n: usize) {
    A::widen_row::<V>(src, dst, n)
}

/// Rounds `n` f32 at `src` into elements at `dst` (no overlap); `not_nan`: the caller knows
/// no value is NaN (the same bits, faster).
///
/// # Safety
/// `src` readable and `dst` writable for `n` elements.
#[inline(never)]
pub unsafe fn narrow<V: F32x4, A: Elem>(src: *const f32, dst: *mut A, n: usize, not_nan: bool) {
    A::narrow_row::<V>(src, dst, n, not_nan)
}
