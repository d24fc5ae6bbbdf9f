//! What every entry point checks before a kernel touches memory: the parameter block and the
//! address array read and checked ([`call`]), each operand's range inside memory for the rows
//! the call touches ([`operand_spans`]), and the status code an entry point returns.

use crate::abi::{
    BackwardOperand as B, Extent, ForwardOperand as F, Gate, Params, Status, DTYPES, DTYPE_MASK,
};
use crate::kernel::{Quant, Scalars};
use core::arch::wasm32::memory_size;

/// Address words of each operation's entry points: its operands (and the backward's workspace).
pub(super) const FORWARD_ADDRS: usize = F::COUNT;
pub(super) const BACKWARD_ADDRS: usize = B::COUNT;

/// Checks that `len` floats at `addr` lie inside memory (`required`: `addr` may not be 0).
pub(super) fn span(addr: usize, len: usize, required: bool) -> Result<(), Status> {
    span_of(addr, len, 4, required)
}

/// Checks that `len` elements of `size` bytes at `addr` (aligned to `size`) lie inside memory.
pub(super) fn span_of(addr: usize, len: usize, size: usize, required: bool) -> Result<(), Status> {
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

/// Checks a workspace: `floats` floats at `addr` inside memory, 8-byte aligned (it starts
/// with f64 sums).
pub(super) fn work_span(addr: usize, floats: usize, required: bool) -> Result<(), Status> {
    span(addr, floats, required)?;
    if addr % 8 != 0 {
        return Err(Status::Align);
    }
    Ok(())
}

/// Checks that every operand of `a` lies inside memory for `rows` rows of `dim`, as its
/// extent (`extents`, in operand order) says: a matrix of `es`-byte elements (of bytes for
/// the operand `bytes`, a quantized output), one f32 per row, or one row of f32; present where
/// bit `i` of `required` is set. So an operand is checked by its extent alone; the rules
/// between operands are the entry points'.
#[inline(always)]
pub(super) fn operand_spans<const N: usize>(
    a: &[usize],
    extents: &[Extent; N],
    (rows, dim, es): (usize, usize, usize),
    bytes: Option<usize>,
    required: u32,
) -> Result<(), Status> {
    let n = matrix(rows, dim)?;
    for (i, e) in extents.iter().enumerate() {
        let req = required >> i & 1 != 0;
        match e {
            Extent::Matrix => span_of(a[i], n, if bytes == Some(i) { 1 } else { es }, req)?,
            Extent::PerRow => span(a[i], rows, req)?,
            Extent::Row => span(a[i], dim, req)?,
        }
    }
    Ok(())
}

/// The bit of operand `i` in a `required` mask.
pub(super) const fn bit(i: u32, on: bool) -> u32 {
    (on as u32) << i
}

pub(super) fn matrix(rows: usize, dim: usize) -> Result<usize, Status> {
    if dim == 0 {
        return Err(Status::Dim);
    }
    rows.checked_mul(dim).ok_or(Status::Bounds)
}

/// The code an entry point returns for `r`.
pub(super) fn status(r: Result<(), Status>) -> u32 {
    r.err().unwrap_or(Status::Ok) as u32
}

/// Bytes per element of the activations' storage type in `dtypes`' low bits (not a quantized one).
pub(super) fn elem_size(dtypes: u32) -> Result<usize, Status> {
    DTYPES
        .get((dtypes & DTYPE_MASK) as usize)
        .filter(|d| d.qmax == 0)
        .map(|d| d.bytes)
        .ok_or(Status::Dtype)
}

/// A forward's quantized output ([`Params`]'s `out_dtype`, `quant_scale`) without its
/// addresses, or None for an output stored as the activations are.
pub(super) fn quant_of(p: &Params) -> Result<Option<Quant>, Status> {
    if p.out_dtype == 0 {
        return Ok(None);
    }
    let d = DTYPES.get(p.out_dtype as usize).ok_or(Status::Dtype)?;
    if d.qmax == 0 || !(p.quant_scale >= 0.0 && p.quant_scale.is_finite()) {
        return Err(Status::Dtype);
    }
    Ok(Some(Quant {
        out: core::ptr::null_mut(),
        scales: core::ptr::null_mut(),
        qmax: d.qmax as f32,
        scale: p.quant_scale,
        code: p.out_dtype,
    }))
}

/// A call's parameter block and address array, read from memory and checked: `stat` in the
/// row, a known storage type and gate.
pub(super) struct Call<const N: usize> {
    pub(super) p: Params,
    pub(super) a: [usize; N],
    pub(super) es: usize,
    pub(super) gate: Gate,
}

impl<const N: usize> Call<N> {
    /// The kernel's scalars and flags of this call: its parameter block, read once.
    pub(super) fn scalars(&self) -> Scalars {
        Scalars::of(&self.p, self.gate)
    }
}

/// Reads the block at `params` and the `N` addresses at `addrs`.
pub(super) fn call<const N: usize>(params: usize, addrs: usize) -> Result<Call<N>, Status> {
    span(params, core::mem::size_of::<Params>() / 4, true)?;
    span(addrs, N, true)?;
    // SAFETY: both ranges were checked to lie inside memory, aligned to 4.
    let (p, raw) = unsafe {
        (
            core::ptr::read(params as *const Params),
            core::ptr::read(addrs as *const [u32; N]),
        )
    };
    let dim = p.dim as usize;
    matrix(1, dim)?;
    if p.stat == 0 || p.stat > p.dim {
        return Err(Status::Stat);
    }
    let gate = Gate::of(p.gate).ok_or(Status::Gate)?;
    Ok(Call {
        p,
        a: raw.map(|v| v as usize),
        es: elem_size(p.dtypes)?,
        gate,
    })
}
