//! The scalars and flags of a kernel call, the same for every row: what the forward and the
//! backward share, made once from the call's parameter block (`abi::Params`) by the bindings.

use crate::abi::{Gate, Params, LLAMA, LLAMA_W};

/// See the module docs.
#[derive(Clone, Copy, Debug)]
pub struct Scalars {
    /// Row length.
    pub dim: usize,
    /// Added inside the square root.
    pub eps: f32,
    /// Added to the gain: the gain is `offset + g` (Gemma: 1); not used without a gain.
    pub offset: f32,
    /// rstd is estimated from the first `stat` elements of each row (pRMSNorm), `1..=dim`.
    pub stat: usize,
    /// The `llama` casting mode (half types with a gain): `x · rstd` is rounded to the
    /// activations' type before the gain multiplies it, and the backward rounds `gy = dy·g` to
    /// it and takes the weight gradient from the rounded `x·rstd`, as autograd does through
    /// LlamaRMSNorm. Without it one rounding at the end (`none`, `gemma`).
    pub llama: bool,
    /// With `llama`, the weight is stored in the activations' type too: each product with it
    /// is rounded to that type (the backward's weight-gradient terms before the rows are
    /// summed; a gated forward's gained value before the gate).
    pub llama_w: bool,
    /// Where `silu(z)` multiplies: after the norm, before it, or not at all (see `gate`).
    pub gate: Gate,
}

impl Scalars {
    /// The scalars of a call's parameter block `p` (checked by the bindings), its gate parsed.
    pub fn of(p: &Params, gate: Gate) -> Self {
        Scalars {
            dim: p.dim as usize,
            eps: p.eps,
            offset: p.offset,
            stat: p.stat as usize,
            llama: p.dtypes & LLAMA != 0,
            llama_w: p.dtypes & LLAMA_W != 0,
            gate,
        }
    }

    /// Plain RMSNorm over rows of `dim`: no offset, the rms over the whole row, no casting, no gate.
    pub fn plain(dim: usize, eps: f32) -> Self {
        Scalars {
            dim,
            eps,
            offset: 0.0,
            stat: dim,
            llama: false,
            llama_w: false,
            gate: Gate::None,
        }
    }
}
