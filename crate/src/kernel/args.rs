//! What one forward or backward call is given: its pointers and scalars. Read by every kernel
//! module (the plain rows, the gated rows, the weight gradient's blocks), so it depends on none.

use super::scalars::Scalars;
use crate::abi::{BackwardOperand as B, Extent, ForwardOperand as F};
use crate::elem::Elem;

/// The address of operand `i` (extent `e`) from row `row0` of an address array's, the
/// matrices' elements `size` bytes: 0 stays 0 (absent).
#[inline(always)]
fn from_row(addr: usize, e: Extent, row0: usize, dim: usize, size: usize) -> usize {
    match (addr, e) {
        (0, _) | (_, Extent::Row) => addr,
        (_, Extent::Matrix) => addr + row0 * dim * size,
        (_, Extent::PerRow) => addr + 4 * row0,
    }
}

/// Pointers and parameters of one forward call. The activations (`x`, `res`, `y`, `h`) are
/// stored as `A` (f32, or a half type: then each result is rounded to it once, or twice with
/// `llama`); the gain and rstd are always f32.
#[derive(Clone, Copy, Debug)]
pub struct Forward<A: Elem = f32> {
    /// Input, `rows × dim`.
    pub x: *const A,
    /// Residual, `rows × dim`, or null. With it the row normalized is `h = x + res`, written
    /// to `h` (the fused residual add).
    pub res: *const A,
    /// Gain, `dim`; null for none (g = 1, and `offset` is not used).
    pub g: *const f32,
    /// Output, `rows × dim`; may equal `x`.
    pub y: *mut A,
    /// With `res`: receives `x + res`, `rows × dim`; may equal `x` or `res`, not `y`.
    pub h: *mut A,
    /// Receives one rstd per row, or null.
    pub rstd: *mut f32,
    /// The gate's input, `rows × dim`, with `gate` not `None` (then `res` is null); else null.
    pub z: *const A,
    /// The call's scalars and flags.
    pub s: Scalars,
}

impl<A: Elem> Forward<A> {
    /// The forward of an entry point's address array `a` (in [`F`] order; 0: absent) from row
    /// `row0`: each operand as far on as its extent says. The output is `y` as the activations
    /// are stored (a quantized output's bytes are addressed by the caller).
    pub fn at(a: &[usize; F::COUNT], row0: usize, s: Scalars) -> Self {
        let at = |i: F| {
            from_row(
                a[i as usize],
                F::EXTENTS[i as usize],
                row0,
                s.dim,
                size_of::<A>(),
            )
        };
        Forward {
            x: at(F::X) as *const A,
            res: at(F::Residual) as *const A,
            g: at(F::Weight) as *const f32,
            y: at(F::Y) as *mut A,
            h: at(F::H) as *mut A,
            rstd: at(F::Rstd) as *mut f32,
            z: at(F::Z) as *const A,
            s,
        }
    }

    /// This call from its row `r` on: every operand as far on as its extent says.
    pub fn from(&self, r: usize) -> Self {
        let at =
            |p: usize, i: F| from_row(p, F::EXTENTS[i as usize], r, self.s.dim, size_of::<A>());
        Forward {
            x: at(self.x as usize, F::X) as *const A,
            res: at(self.res as usize, F::Residual) as *const A,
            g: self.g,
            y: at(self.y as usize, F::Y) as *mut A,
            h: at(self.h as usize, F::H) as *mut A,
            rstd: at(self.rstd as usize, F::Rstd) as *mut f32,
            z: at(self.z as usize, F::Z) as *const A,
            s: self.s,
        }
    }
}

impl Forward {
    /// A plain forward: no residual, no offset, the rms over the whole row.
    pub fn plain(
        x: *const f32,
        g: *const f32,
        y: *mut f32,
        rstd: *mut f32,
        dim: usize,
        eps: f32,
    ) -> Self {
        Forward {
            x,
            res: core::ptr::null(),
            g,
            y,
            h: core::ptr::null_mut(),
            rstd,
            z: core::ptr::null(),
            s: Scalars::plain(dim, eps),
        }
    }
}

/// Pointers and parameters of one backward call, shared by the sync path and the pool's shards.
/// The activations and their gradients (`dy`, `x`, `dh`, `dx`) are stored as `A`; the gain,
/// rstd and the weight gradient are f32.
#[derive(Clone, Copy, Debug)]
pub struct Backward<A: Elem = f32> {
    /// Upstream gradient, `rows × dim`.
    pub dy: *const A,
    /// Forward input, `rows × dim` (with a fused residual add: the forward's `h = x + res`).
    pub x: *const A,
    /// Gain, `dim`; null for none (then no weight gradient is formed, and `offset` is not used).
    pub g: *const f32,
    /// Saved rstd from the forward, `rows`; null to recompute it from `x`, `eps` and `stat`.
    pub rstd: *const f32,
    /// Gradient arriving on the residual stream, `rows × dim`, added to `dx`; or null.
    pub dh: *const A,
    /// Destination of the input gradient, `rows × dim`; may equal `dy`, `x` or `dh`.
    pub dx: *mut A,
    /// The gate's input, `rows × dim`, with `gate` not `None` (then `dh` is null); else null.
    pub z: *const A,
    /// Destination of the gate's gradient, `rows × dim`, with `z`; may equal `dy`, not `dx`.
    pub dz: *mut A,
    /// The call's scalars and flags (`eps` used when rstd is recomputed).
    pub s: Scalars,
}

impl<A: Elem> Backward<A> {
    /// The backward of an entry point's address array `a` (in [`B`] order; 0: absent), every
    /// operand at its row 0.
    pub fn at(a: &[usize; B::COUNT], s: Scalars) -> Self {
        let at = |i: B| a[i as usize];
        Backward {
            dy: at(B::Dy) as *const A,
            x: at(B::X) as *const A,
            g: at(B::Weight) as *const f32,
            rstd: at(B::Rstd) as *const f32,
            dh: at(B::Dresidual) as *const A,
            dx: at(B::Dx) as *mut A,
            z: at(B::Z) as *const A,
            dz: at(B::Dz) as *mut A,
            s,
        }
    }
}

impl Backward {
    /// A plain backward: no residual gradient, no offset, rstd over the whole row.
    pub fn plain(
        dy: *const f32,
        x: *const f32,
        g: *const f32,
        rstd: *const f32,
        dx: *mut f32,
        dim: usize,
        eps: f32,
    ) -> Self {
        Backward {
            dy,
            x,
            g,
            rstd,
            dh: core::ptr::null(),
            dx,
            z: core::ptr::null(),
            dz: core::ptr::null_mut(),
            s: Scalars::plain(dim, eps),
        }
    }
}
