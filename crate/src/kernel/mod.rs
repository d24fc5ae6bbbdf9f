//! RMSNorm forward and backward (and a LayerNorm forward, to compare against) over row-major
//! `rows × dim` f32 matrices, written once against [`F32x4`].
//!
//! Shapes: `x`, `y`, `dy`, `dx` hold `rows * dim` floats; `g` (the gain) and `dg` hold `dim`;
//! `rstd` holds `rows`. A null `g` means "no gain" (g = 1) and is its own code path, not a
//! ones array. All pointers may be unaligned; outputs may alias an input of the same shape
//! exactly (`y == x`, `dx == dy`, `dx == x`), since each element is read before it is written.
//!
//! Numerics: the sum of squares takes one pass with 4 vector accumulators (16 partial sums, in
//! the order [`fold`] fixes for every reduction; rows longer than [`SUM_BLOCK`] in blocks of
//! it, added in f64), then `rstd = 1 / sqrt(ss / dim + eps)`. Rows where f32 cannot hold that
//! sum faithfully (it overflowed to inf, or it is so small that subnormal squares lost bits and
//! eps does not hide it) are redone in f64 by a slow path that only such rows pay. A NaN
//! stays in its row.
//!
//! One concern per file: [`args`] (what a call is given), [`reduce`] (the summation order and
//! the fast-path tests), [`elems`] (the gain row, stretches, the forward's scaling),
//! [`forward`], [`quant`] (the forward with an int8 or float8 output), [`backward`] (the rows
//! of a span, each by the passes of [`row_passes`]), [`blocks`] (the weight gradient's
//! deterministic blocks and the backward's entry points), [`gate`] (the gated RMSNorm's rows, forward and
//! backward); [`bench`] (feature `bench-kernels`) holds what only the benchmark's build
//! exports. The modules depend on each other one way only: `quant` on `forward`, `forward` and
//! `blocks` on the rows they run (`backward`, `gate`), `backward` on `row_passes`, every one on
//! `args`, `reduce` and `elems`.

mod args;
mod backward;
#[cfg(feature = "bench-kernels")]
mod bench;
mod blocks;
mod elems;
mod forward;
mod gate;
mod quant;
mod reduce;
mod row_passes;
mod scalars;

pub use args::{Backward, Forward};
#[cfg(feature = "bench-kernels")]
pub use bench::{add, copy, layer_norm_forward};
pub use blocks::{
    backward, backward_rows, backward_span, dg_blocks, pool_work_floats, reduce_partials,
    span_work_floats, DG_BLOCK_ROWS,
};
pub use elems::NoMemory;
pub use forward::{forward, forward_with};
pub use gate::{exp, silu};
pub use quant::{forward_quant, Quant};
pub use reduce::SUM_BLOCK;
pub use scalars::Scalars;
