//! The scalars and flags of a kernel call, the same for every row: what the forward and the
//! backward share — the call's parameter block (`abi::Params`) as the bindings read it, and
//! what the kernels want of it decoded once (lengths as `usize`, the flags, the gate).

use crate::abi::{Gate, Params, LLAMA, LLAMA_W};

/// See the module docs.
#[derive(Clone, Copy, Debug)]
pub struct Scalars {
    /// The parameter block: `eps` (added inside the square root) and `offset` (added to the
    /// gain, `offset + g`: Gemma's 1; not used without a gain) are read from it as they are.
    pub p: Params,
    /// Row length (`p.dim`).
    pub dim: usize,
    /// rstd is estimated from the first `stat` elements of each row (pRMSNorm), `1..=dim` (`p.stat`).
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
            p: *p,
            dim: p.dim as usize,
            stat: p.stat as usize,
            llama: p.dtypes & LLAMA != 0,
            llama_w: p.dtypes & LLAMA_W != 0,
            gate,
        }
    }

    /// Plain RMSNorm over rows of `dim`: no offset, the rms over the whole row, no casting, no gate.
    pub fn plain(dim: usize, eps: f32) -> Self {
        Scalars {
            p: Params::plain(dim as u32, eps),
            dim,
            stat: dim,
            llama: false,
            llama_w: false,
            gate: Gate::None,
        }
    }
}
