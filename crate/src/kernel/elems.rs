//! Element-wise pieces of a row's passes: the rows of scratch a call needs (on the stack, or
//! for long rows on the heap), the gain row (the weight, Gemma's `offset + weight` or ones),
//! and the forward's scaling.

use super::scalars::Scalars;
use crate::elem::Elem;
use crate::simd::F32x4;
use std::alloc::{alloc, dealloc, Layout};

/// Floats of a row of scratch on the stack (32 KiB); a longer row's scratch is allocated.
pub(super) const STACK_ROW: usize = 8192;

/// A stack buffer of one row of scratch.
pub(super) type Buffer = core::mem::MaybeUninit<[f32; STACK_ROW]>;

/// The module's memory could not grow for a long row's scratch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoMemory;

/// A row of `n` floats of scratch: the caller's stack buffer when it fits, else allocated
/// (once per call, freed on drop). Every pass then goes over the whole row in one loop.
pub(super) struct Row {
    ptr: *mut f32,
    heap: Option<Layout>,
}

impl Row {
    /// A row of `n` floats, in `stack` when `n` fits it.
    #[inline(always)]
    pub(super) unsafe fn new(n: usize, stack: &mut Buffer) -> Result<Row, NoMemory> {
        if n <= STACK_ROW {
            return Ok(Row {
                ptr: stack.as_mut_ptr() as *mut f32,
                heap: None,
            });
        }
        let layout = Layout::array::<f32>(n).map_err(|_| NoMemory)?;
        let ptr = alloc(layout) as *mut f32;
        if ptr.is_null() {
            return Err(NoMemory);
        }
        Ok(Row {
            ptr,
            heap: Some(layout),
        })
    }

    #[inline(always)]
    pub(super) fn ptr(&self) -> *mut f32 {
        self.ptr
    }
}

impl Drop for Row {
    fn drop(&mut self) {
        if let Some(l) = self.heap {
            // SAFETY: allocated by `Row::new` with this layout.
            unsafe { dealloc(self.ptr as *mut u8, l) }
        }
    }
}

/// The gain every element of a row is multiplied by, as one row of floats: the weight itself;
/// `offset + weight` (each sum formed once per call, the same f32 addition the element-wise
/// form made); or ones without a weight (`v · 1 = v` exactly, sign of zero, infinities and NaN
/// included). So whether there is a weight or an offset changes the row the loops read, not
/// the loops.
pub(super) struct Gain {
    g: *const f32,
    _row: Option<Row>,
}

impl Gain {
    /// The gain of rows of `dim` with weight `g` (null: none) and the call's scalars `s`
    /// ([`gain_at`]), staged in `stack` (or allocated, past [`STACK_ROW`]) where it is not the
    /// weight itself.
    #[inline(always)]
    pub(super) unsafe fn new(
        g: *const f32,
        s: &Scalars,
        dim: usize,
        stack: &mut Buffer,
    ) -> Result<Gain, NoMemory> {
        if !g.is_null() && s.p.offset == 0.0 {
            return Ok(Gain { g, _row: None });
        }
        let row = Row::new(dim, stack)?;
        stage(g, s, row.ptr(), dim);
        Ok(Gain {
            g: row.ptr(),
            _row: Some(row),
        })
    }

    /// The gain row.
    #[inline(always)]
    pub(super) fn ptr(&self) -> *const f32 {
        self.g
    }
}

/// `buf[i]` = the gain of element `i` ([`gain_at`]) for `i < n`, ones without a weight.
#[inline(never)]
unsafe fn stage(g: *const f32, s: &Scalars, buf: *mut f32, n: usize) {
    for i in 0..n {
        *buf.add(i) = gain_at(g, s, i).unwrap_or(1.0);
    }
}

/// The gain of element `i`, in f32: none without a weight (`None`: 1, and the scalars unused),
/// `offset + g` with an offset (Gemma), else `g`. The one definition: the gain row staged for
/// the vector loops and every element-wise path (the f64 rows, the gated rows) read it, so a
/// scalar folded into the gain is written here alone.
#[inline(always)]
pub(super) unsafe fn gain_at(g: *const f32, s: &Scalars, i: usize) -> Option<f32> {
    if g.is_null() {
        None
    } else if s.p.offset != 0.0 {
        Some(s.p.offset + *g.add(i))
    } else {
        Some(*g.add(i))
    }
}

/// Rows a call must have for the forward to test its gain row for infinities and NaN (a pass
/// over the row): with a finite gain, a row whose statistic covers it (`stat = dim`) and whose
/// rstd is finite has no NaN result, and half types store without the test a NaN needs (the
/// bfloat16 forward ran 1.3-1.4x faster at 64-512 x 4096). A one-row call (a decoder's) would
/// pay the pass for one row.
pub(super) const NOT_NAN_ROWS: usize = 4;

/// Whether the `n` floats at `g` are all finite (neither infinite nor NaN).
#[inline(never)]
pub(super) unsafe fn all_finite<V: F32x4>(g: *const f32, n: usize) -> bool {
    // v − v is 0 for a finite v and NaN otherwise; a NaN lane stays NaN through the sums.
    let mut acc = V::zero();
    let mut i = 0;
    while i + 4 <= n {
        let v = V::load(g.add(i));
        acc = acc.add(v.sub(v));
        i += 4;
    }
    let mut s = acc.hsum();
    while i < n {
        s += *g.add(i) - *g.add(i);
        i += 1;
    }
    s == 0.0
}

/// `y = x · r · g` over `n` elements: `x` read as `X`, `y` stored as `A`, `g` a gain row. With
/// `LLAMA` (the casting mode; only with a weight) `x · r` is rounded to the activations' type
/// `R` before the gain multiplies it, as Hugging Face's LlamaRMSNorm does (`weight *
/// h.to(input_dtype)`); for f32 activations that rounding is nothing. A constant, not a flag:
/// as a flag the engine rounded every lane and selected, and the bfloat16 forward without
/// llama ran 3-7% slower (bench/ab-builds.mjs).
///
/// `not_nan`: the caller knows no result is NaN (see [`NOT_NAN_ROWS`]).
///
/// A second pass over the row, which is still in L1/L2 from the first (other orders that were
/// measured and not kept: docs/performance.md, "Kernel designs measured and not kept").
#[inline(always)]
pub(super) unsafe fn scale<V: F32x4, X: Elem, A: Elem, R: Elem, const LLAMA: bool>(
    x: *const X,
    g: *const f32,
    y: *mut A,
    n: usize,
    r: f32,
    not_nan: bool,
) {
    let rv = V::splat(r);
    let scale = |xv: V, i: usize| {
        let v = xv.mul(rv);
        let v = if LLAMA { R::round(v) } else { v };
        v.mul(V::load(g.add(i)))
    };
    let eight = |i: usize| {
        let [x0, x1] = X::load8::<V>(x.add(i));
        [scale(x0, i), scale(x1, i + 4)]
    };
    // Each store follows the loads of its own elements, and the next loads follow it: with
    // all of a block's loads first (as the sum pass is written) the float32 forward ran at
    // 0.6-0.7x its speed whenever `y` sat 16 or 32 bytes (mod 64) past `x` modulo 4 KiB, where
    // a load's address matches an earlier store's in the bits the CPU checks first (Intel
    // Xeon; bench/placements.ts). A float32 store is one vector; another type stores eight
    // elements in one (its `store8`).
    let mut i = 0;
    if A::F32 {
        while i + 16 <= n {
            for j in [i, i + 4, i + 8, i + 12] {
                A::store::<V>(y.add(j), scale(X::load::<V>(x.add(j)), j));
            }
            i += 16;
        }
    } else if not_nan {
        while i + 16 <= n {
            A::store8_not_nan::<V>(y.add(i), eight(i));
            A::store8_not_nan::<V>(y.add(i + 8), eight(i + 8));
            i += 16;
        }
    } else {
        while i + 16 <= n {
            A::store8::<V>(y.add(i), eight(i));
            A::store8::<V>(y.add(i + 8), eight(i + 8));
            i += 16;
        }
    }
    while i + 4 <= n {
        A::store::<V>(y.add(i), scale(X::load::<V>(x.add(i)), i));
        i += 4;
    }
    while i < n {
        let v = X::get(x.add(i)) * r;
        let v = if LLAMA { R::round1(v) } else { v };
        A::put(y.add(i), v * *g.add(i));
        i += 1;
    }
}
