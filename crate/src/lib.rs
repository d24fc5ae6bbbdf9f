//! RMSNorm (Zhang & Sennrich, 2019) kernels for WebAssembly SIMD128.
//!
//! - [`simd`]: a four-lane f32 vector trait with a SIMD128 and a portable implementation.
//! - [`kernel`]: forward, backward (with a deterministic weight gradient), and a LayerNorm
//!   forward for comparison, written once against that trait.
//! - `bindings` (wasm32 only): the `#[wasm_bindgen]` surface, pointers in, status codes out.
//!
//! Every build of the package comes from this crate with other target features and cargo
//! features (SIMD128 or none, relaxed SIMD, shared memory with feature `threads`, the
//! benchmark's kernels with `bench-kernels`): `build.sh` lists them, once.

#[cfg(all(
    feature = "threads",
    not(all(
        target_feature = "atomics",
        target_feature = "bulk-memory",
        target_feature = "simd128"
    ))
))]
compile_error!(
    "feature `threads` (the simd-threads build) needs RUSTFLAGS with \
     `-C target-feature=+atomics,+bulk-memory,+mutable-globals,+simd128`, the shared-memory \
     link args and `-Z build-std=std,panic_abort`: run build.sh"
);

pub mod abi;
pub mod elem;
pub mod half_bits;
pub mod kernel;
pub mod quant_bits;
pub mod simd;

#[cfg(target_arch = "wasm32")]
mod bindings;
