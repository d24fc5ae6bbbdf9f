//! The codes that cross the wasm boundary, defined once. `scripts/gen-abi.mjs` writes
//! `ts/abi.ts` from this file (the names, values and doc lines below), and a test keeps the
//! two equal, so the TypeScript side never copies a code by hand.
//!
//! Keep the shape the generator reads: a `///` line of text, then `Name = value,` in an enum,
//! or `pub const NAME: u32 = value;`.

/// What a kernel entry point returns: 0, or which of its bounds checks failed.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// success
    Ok = 0,
    /// dim is zero
    Dim = 1,
    /// a required address is 0
    Null = 2,
    /// an address is not a multiple of its element size
    Align = 3,
    /// a range runs past the end of wasm memory, or its size overflows
    Bounds = 4,
    /// a row range is reversed, past the end, or a pool shard does not start on a dweight block
    Shard = 5,
    /// stat (the elements rstd is estimated from) is 0 or more than dim
    Stat = 6,
    /// an unknown storage type code in dtypes, or a float32 code where a half one is needed
    Dtype = 7,
}

/// Storage type codes: the low two bits ([`DTYPE_MASK`]) of a kernel's `dtypes` argument.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// IEEE binary32
    Float32 = 0,
    /// IEEE binary16, as u16 bit patterns
    Float16 = 1,
    /// bfloat16 (the top half of a float32), as u16 bit patterns
    Bfloat16 = 2,
}

/// The bits of `dtypes` that hold a [`Dtype`].
pub const DTYPE_MASK: u32 = 3;
/// The `llama` casting mode: `x·rstd` is rounded to the activations' type before the gain.
pub const LLAMA: u32 = 4;
/// With `LLAMA`: the weight has the activations' half type, so the backward rounds each weight-gradient term to it as autograd does.
pub const LLAMA_W: u32 = 8;
