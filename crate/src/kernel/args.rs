//! What one forward or backward call is given: its pointers and scalars. Read by every kernel
//! module (the plain rows, the gated rows, the weight gradient's blocks), so it depends on none.
//!
//! Each view is made of its operation's operand table (abi.rs `each_operation!`: the forward's,
//! the backward's): a field per operand, as that row names and types it, so that a
//! new operand is a row of the table, not a field written here too.

use super::scalars::Scalars;
use crate::abi::Extent;
use crate::each_operation;
use crate::elem::Elem;

/// The address of an operand (extent `e`) from row `row0` of an address array's, the matrices'
/// elements `size` bytes: 0 stays 0 (absent).
#[inline(always)]
fn from_row(addr: usize, e: Extent, row0: usize, dim: usize, size: usize) -> usize {
    match (addr, e) {
        (0, _) | (_, Extent::Row) => addr,
        (_, Extent::Matrix) => addr + row0 * dim * size,
        (_, Extent::PerRow) => addr + 4 * row0,
    }
}

/// An operation's view of a call from its table: a pointer per operand, as the table types it
/// (the activations stored as `A`: f32, or a half type; the gain, rstd and per-row arrays f32),
/// and the call's scalars.
macro_rules! call_view {
    (
        $(#[$doc:meta])* $view:ident, $name:ident $(, [$(#[$wdoc:meta])* $wv:ident = $wn:literal])?;
        $($(#[$vdoc:meta])* $v:ident = $n:literal, $e:ident, $f:ident: $t:ty;)*
    ) => {
        /// Pointers and parameters of one call (its operands: see its operand table in abi.rs),
        /// shared by the sync path and the pool's shards.
        #[derive(Clone, Copy, Debug)]
        pub struct $view<A: Elem = f32> {
            $($(#[$vdoc])* pub $f: $t,)*
            /// The call's scalars and flags.
            pub s: Scalars,
        }

        impl<A: Elem> $view<A> {
            /// The call of an entry point's address array `a` (in operand order; 0: absent) from
            /// row `row0`: each operand as far on as its extent says.
            pub fn at(a: &[usize; crate::abi::$name::COUNT], row0: usize, s: Scalars) -> Self {
                $view {
                    $($f: from_row(a[crate::abi::$name::$v as usize], Extent::$e, row0, s.dim, size_of::<A>()) as $t,)*
                    s,
                }
            }

            /// This call from its row `r` on: every operand as far on as its extent says.
            pub fn from(&self, r: usize) -> Self {
                $view {
                    $($f: from_row(self.$f as usize, Extent::$e, r, self.s.dim, size_of::<A>()) as $t,)*
                    s: self.s,
                }
            }

            /// A call with every operand absent but those the caller sets (`..absent(s)`).
            pub fn absent(s: Scalars) -> Self {
                Self::at(&[0; crate::abi::$name::COUNT], 0, s)
            }
        }
    };
}

each_operation!(call_view);

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
            g,
            y,
            rstd,
            ..Forward::absent(Scalars::plain(dim, eps))
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
            dx,
            ..Backward::absent(Scalars::plain(dim, eps))
        }
    }
}
