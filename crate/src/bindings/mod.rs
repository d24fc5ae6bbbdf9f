//! The JavaScript boundary: thin `#[wasm_bindgen]` functions over [`crate::kernel`].
//!
//! Arguments are byte addresses into this module's memory (0 = absent). Each entry point
//! checks that what it will touch lies inside the memory and returns a status code rather
//! than trapping, so no panic or out-of-bounds access can reach JavaScript as an opaque
//! `unreachable`. The TypeScript layer validates first and treats a non-zero status as a bug.

use crate::abi::{Dtype, Status, DTYPE_MASK, LLAMA, LLAMA_W};
use crate::half::{self, Bf16, Elem, F16};
use crate::kernel::{self, Backward, Forward};
use crate::simd::Native;
use core::arch::wasm32::memory_size;
use std::alloc::{alloc, dealloc, Layout};
use wasm_bindgen::prelude::*;

/// The storage type codes ([`Dtype`]) as patterns for matching the `dtypes` argument.
const CODE_F32: u32 = Dtype::Float32 as u32;
const CODE_F16: u32 = Dtype::Float16 as u32;
const CODE_BF16: u32 = Dtype::Bfloat16 as u32;

/// Checks that `len` floats at `addr` lie inside memory (`required`: `addr` may not be 0).
fn span(addr: usize, len: usize, required: bool) -> Result<(), Status> {
    span_of(addr, len, 4, required)
}

/// Checks that `len` elements of `size` bytes at `addr` (aligned to `size`) lie inside memory.
fn span_of(addr: usize, len: usize, size: usize, required: bool) -> Result<(), Status> {
    if addr == 0 {
        return if required { Err(Status::Null) } else { Ok(()) };
    }
    if addr % size != 0 {
        return Err(Status::Align);
    }
    let bytes = len.checked_mul(size).ok_or(Status::Bounds)?;
    let end = addr.checked_add(bytes).ok_or(Status::Bounds)?;
    if end > memory_size::<0>() * 65536 {
        return Err(Status::Bounds);
    }
    Ok(())
}

fn matrix(rows: usize, dim: usize) -> Result<usize, Status> {
    if dim == 0 {
        return Err(Status::Dim);
    }
    rows.checked_mul(dim).ok_or(Status::Bounds)
}

fn stat_of(stat: usize, dim: usize) -> Result<usize, Status> {
    if stat == 0 || stat > dim {
        return Err(Status::Stat);
    }
    Ok(stat)
}

/// The code an entry point returns for `r`.
fn status(r: Result<(), Status>) -> u32 {
    r.err().unwrap_or(Status::Ok) as u32
}

/// Bytes per element of the storage type in `dtypes`' low bits.
fn elem_size(dtypes: u32) -> Result<usize, Status> {
    match dtypes & DTYPE_MASK {
        CODE_F32 => Ok(4),
        CODE_F16 | CODE_BF16 => Ok(2),
        _ => Err(Status::Dtype),
    }
}

/// Calls `$f::<A>($args)` with `A` the storage type in `$dt`'s low bits (checked before).
macro_rules! by_dtype {
    ($dt:expr, $f:ident($($arg:expr),*)) => {
        match $dt & DTYPE_MASK {
            CODE_F16 => $f::<F16>($($arg),*),
            CODE_BF16 => $f::<Bf16>($($arg),*),
            _ => $f::<f32>($($arg),*),
        }
    };
}

/// Allocates `len` floats (16-byte aligned) and returns their byte address, or 0 when the
/// memory cannot grow enough. May grow the memory: views into it must be re-created.
#[wasm_bindgen]
pub fn alloc_f32(len: usize) -> usize {
    match Layout::from_size_align(len.max(1).saturating_mul(4), 16) {
        // SAFETY: the layout has non-zero size.
        Ok(l) => unsafe { alloc(l) as usize },
        Err(_) => 0,
    }
}

/// Frees what [`alloc_f32`] returned for the same `len`.
#[wasm_bindgen]
pub fn free_f32(addr: usize, len: usize) {
    if addr != 0 {
        if let Ok(l) = Layout::from_size_align(len.max(1).saturating_mul(4), 16) {
            // SAFETY: `addr` came from `alloc_f32(len)` (the caller's contract).
            unsafe { dealloc(addr as *mut u8, l) }
        }
    }
}

/// Rows per dweight block: pool shards start on multiples of it.
#[wasm_bindgen]
pub fn dg_block_rows() -> usize {
    kernel::DG_BLOCK_ROWS
}

/// RMSNorm forward over `rows × dim` elements: `y = h · rstd · (offset + w)` with `h = x`, or
/// with a residual `res` (`rows × dim`, else 0) `h = x + res` written to `h` (may equal `x` or
/// `res`). `y` may equal `x`. `w` (gain, `dim` f32; then `offset` is added to it) and `rstd`
/// (f32 output, `rows`) may be 0. `rstd = 1/sqrt(Σ h² / stat + eps)` over the first `stat`
/// elements of each row (`1..=dim`; `dim` for RMSNorm, fewer for pRMSNorm). `dtypes`: the
/// storage of `x`, `res`, `y` and `h` (0 f32, 1 float16, 2 bfloat16), plus 4 for the `llama`
/// casting mode; the math is f32 whatever they are.
#[wasm_bindgen]
#[allow(clippy::too_many_arguments)]
pub fn rms_norm_forward(
    x: usize,
    res: usize,
    w: usize,
    y: usize,
    h: usize,
    rstd: usize,
    rows: usize,
    dim: usize,
    eps: f32,
    offset: f32,
    stat: usize,
    dtypes: u32,
) -> u32 {
    status((|| {
        let n = matrix(rows, dim)?;
        let es = elem_size(dtypes)?;
        span_of(x, n, es, true)?;
        span_of(res, n, es, false)?;
        span_of(y, n, es, true)?;
        span_of(h, n, es, res != 0)?;
        span(w, dim, false)?;
        span(rstd, rows, false)?;
        let stat = stat_of(stat, dim)?;
        fn go<A: Elem>(a: [usize; 6], rows: usize, dim: usize, q: (f32, f32, usize, bool)) {
            let k = Forward::<A> {
                x: a[0] as *const A,
                res: a[1] as *const A,
                g: a[2] as *const f32,
                y: a[3] as *mut A,
                h: a[4] as *mut A,
                rstd: a[5] as *mut f32,
                dim,
                eps: q.0,
                offset: q.1,
                stat: q.2,
                llama: q.3,
            };
            // SAFETY: every range was checked to lie inside memory, stat to lie in the row.
            unsafe { kernel::forward_with::<Native, A>(&k, rows) };
        }
        let q = (eps, offset, stat, dtypes & LLAMA != 0);
        by_dtype!(dtypes, go([x, res, w, y, h, rstd], rows, dim, q));
        Ok(())
    })())
}

/// A backward call's checked addresses and parameters, before its storage type is chosen.
#[derive(Clone, Copy)]
struct BackwardArgs {
    a: [usize; 6],
    dim: usize,
    eps: f32,
    offset: f32,
    stat: usize,
    dtypes: u32,
}

impl BackwardArgs {
    /// The kernel's view of these arguments, the activations stored as `A`.
    fn with<A: Elem>(&self) -> Backward<A> {
        let a = self.a;
        Backward {
            dy: a[0] as *const A,
            x: a[1] as *const A,
            g: a[2] as *const f32,
            rstd: a[3] as *const f32,
            dh: a[4] as *const A,
            dx: a[5] as *mut A,
            dim: self.dim,
            eps: self.eps,
            offset: self.offset,
            stat: self.stat,
            llama: self.dtypes & LLAMA != 0,
            llama_w: self.dtypes & LLAMA_W != 0,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn backward_args(
    dy: usize,
    x: usize,
    w: usize,
    rstd: usize,
    dh: usize,
    dx: usize,
    rows: usize,
    dim: usize,
    eps: f32,
    offset: f32,
    stat: usize,
    dtypes: u32,
) -> Result<BackwardArgs, Status> {
    let n = matrix(rows, dim)?;
    let es = elem_size(dtypes)?;
    span_of(dy, n, es, true)?;
    span_of(x, n, es, true)?;
    span_of(dx, n, es, true)?;
    span_of(dh, n, es, false)?;
    span(w, dim, false)?;
    span(rstd, rows, false)?;
    Ok(BackwardArgs {
        a: [dy, x, w, rstd, dh, dx],
        dim,
        eps,
        offset,
        stat: stat_of(stat, dim)?,
        dtypes,
    })
}

/// RMSNorm backward over rows `[row0, row0 + rows)` of a `total`-row matrix, single-threaded
/// (see `kernel::backward_span`; the addresses point at row `row0`): writes `dx` (may equal
/// `dy` or `x`) and, when `w` is set, adds the finished dweight blocks into `dw` (`dim`
/// floats, zeroed first when `row0` is 0), carrying the open block in `work` (`dim` floats)
/// from one span to the next. One call over everything: `row0 = 0`, `total = rows`.
/// `rstd` (`rows`, from the forward) may be 0 to recompute it with `eps` over the first `stat`
/// elements. `offset` and `stat` as in [`rms_norm_forward`]; `dh` (`rows × dim`, or 0) is the
/// gradient on a fused residual add's output, added to `dx` (which may equal `dh` too).
/// `dtypes` as in [`rms_norm_forward`]: the storage of `dy`, `x`, `dh` and `dx`; `w`, `rstd`,
/// `dw` and `work` are f32.
#[wasm_bindgen]
#[allow(clippy::too_many_arguments)]
pub fn rms_norm_backward(
    dy: usize,
    x: usize,
    w: usize,
    rstd: usize,
    dh: usize,
    dx: usize,
    dw: usize,
    work: usize,
    rows: usize,
    dim: usize,
    eps: f32,
    offset: f32,
    stat: usize,
    row0: usize,
    total: usize,
    dtypes: u32,
) -> u32 {
    status((|| {
        let k = backward_args(dy, x, w, rstd, dh, dx, rows, dim, eps, offset, stat, dtypes)?;
        span(dw, dim, w != 0)?;
        span(work, dim, w != 0)?;
        if row0.checked_add(rows).is_none_or(|end| end > total) {
            return Err(Status::Shard);
        }
        fn go<A: Elem>(k: BackwardArgs, s: [usize; 5]) {
            // SAFETY: every range was checked to lie inside memory.
            unsafe {
                kernel::backward_span::<Native, A>(&k.with::<A>(), s[0], s[1], s[2], s[3] as *mut f32, s[4] as *mut f32)
            };
        }
        by_dtype!(dtypes, go(k, [row0, rows, total, dw, work]));
        Ok(())
    })())
}

/// One pool shard of the backward: rows `[row0, row1)` of a `rows × dim` problem, `row0` a
/// multiple of [`dg_block_rows`]. With `w`, block partials go to `partials`
/// (`ceil(rows / dg_block_rows) × dim` floats); add them with [`reduce_partials`]. The other
/// arguments as in [`rms_norm_backward`].
#[wasm_bindgen]
#[allow(clippy::too_many_arguments)]
pub fn rms_norm_backward_rows(
    dy: usize,
    x: usize,
    w: usize,
    rstd: usize,
    dh: usize,
    dx: usize,
    partials: usize,
    rows: usize,
    dim: usize,
    eps: f32,
    offset: f32,
    stat: usize,
    row0: usize,
    row1: usize,
    dtypes: u32,
) -> u32 {
    status((|| {
        let k = backward_args(dy, x, w, rstd, dh, dx, rows, dim, eps, offset, stat, dtypes)?;
        if row0 > row1 || row1 > rows || row0 % kernel::DG_BLOCK_ROWS != 0 {
            return Err(Status::Shard);
        }
        let blocks = kernel::dg_blocks(rows);
        span(partials, matrix(blocks, dim)?, w != 0)?;
        fn go<A: Elem>(k: BackwardArgs, row0: usize, row1: usize, partials: usize) {
            // SAFETY: every range was checked to lie inside memory.
            unsafe { kernel::backward_rows::<Native, A>(&k.with::<A>(), row0, row1, partials as *mut f32) };
        }
        by_dtype!(dtypes, go(k, row0, row1, partials));
        Ok(())
    })())
}

/// The checks of a conversion: `dtype` a half type, `n` of its elements at `half` and `n`
/// floats at `f32s`, both inside memory.
fn half_spans(half: usize, f32s: usize, n: usize, dtype: u32) -> Result<(), Status> {
    if elem_size(dtype)? != 2 {
        return Err(Status::Dtype);
    }
    span_of(half, n, 2, true)?;
    span(f32s, n, true)
}

/// Widens `n` half-precision bit patterns at `src` (`dtype` 1 float16, 2 bfloat16) into f32
/// at `dst` (`n` floats; no overlap). Exact.
#[wasm_bindgen]
pub fn widen_half(src: usize, dst: usize, n: usize, dtype: u32) -> u32 {
    status((|| {
        half_spans(src, dst, n, dtype)?;
        fn go<A: Elem>(src: usize, dst: usize, n: usize) {
            // SAFETY: checked above; non-overlap is the caller's contract.
            unsafe { half::widen::<Native, A>(src as *const A, dst as *mut f32, n) }
        }
        by_dtype!(dtype, go(src, dst, n));
        Ok(())
    })())
}

/// Rounds `n` floats at `src` to half precision (`dtype` 1 float16, 2 bfloat16; nearest even)
/// into bit patterns at `dst` (`n` u16; no overlap).
#[wasm_bindgen]
pub fn narrow_half(src: usize, dst: usize, n: usize, dtype: u32) -> u32 {
    status((|| {
        half_spans(dst, src, n, dtype)?;
        fn go<A: Elem>(src: usize, dst: usize, n: usize) {
            // SAFETY: checked above; non-overlap is the caller's contract.
            unsafe { half::narrow::<Native, A>(src as *const f32, dst as *mut A, n) }
        }
        by_dtype!(dtype, go(src, dst, n));
        Ok(())
    })())
}

/// `dw = Σ_b partials[b·dim ..]` (blocks in order), onto zero or, when `accumulate` is 1, onto
/// `dw` as it is (the pool's later segments of one streamed matrix).
#[wasm_bindgen]
pub fn reduce_partials(
    partials: usize,
    blocks: usize,
    dim: usize,
    dw: usize,
    accumulate: u32,
) -> u32 {
    status((|| {
        span(partials, matrix(blocks, dim)?, true)?;
        span(dw, dim, true)?;
        // SAFETY: checked above.
        unsafe {
            kernel::reduce_partials::<Native>(
                partials as *const f32,
                blocks,
                dim,
                dw as *mut f32,
                accumulate != 0,
            )
        };
        Ok(())
    })())
}

#[cfg(feature = "bench-kernels")]
mod bench;
