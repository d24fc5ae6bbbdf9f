//! The JavaScript boundary: thin `#[wasm_bindgen]` functions over [`crate::kernel`].
//!
//! A kernel call takes two addresses into this module's memory: its parameter block
//! ([`crate::abi::Params`]: the scalars and flags of the call) and its address array (one `u32` per operand,
//! in the order of [`crate::abi::ForwardOperand`] / [`crate::abi::BackwardOperand`]; 0 = absent), then row indices.
//! Each entry point checks that what it will touch lies inside the memory and returns a status
//! code rather than trapping, so no panic or out-of-bounds access can reach JavaScript as an
//! opaque `unreachable`. The TypeScript layer validates first and treats a non-zero status as a
//! bug.

use crate::kernel;
use std::alloc::{alloc, dealloc, Layout};
use wasm_bindgen::prelude::*;

mod backward;
mod checks;
mod convert;
mod forward;

#[cfg(feature = "bench-kernels")]
mod bench;

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

/// FNV-1a (32 bits) of `b`: the hash `scripts/gen-abi.mjs` computes the same way.
const fn fnv1a(b: &[u8]) -> u32 {
    let (mut h, mut i) = (0x811c_9dc5u32, 0);
    while i < b.len() {
        h = (h ^ b[i] as u32).wrapping_mul(0x0100_0193);
        i += 1;
    }
    h
}

/// The hash of the `abi.rs` this module was built from, computed when it is compiled: the
/// loader compares it with its own copy's (`ts/generated/abi.ts` `ABI_HASH`).
#[wasm_bindgen]
pub fn abi_hash() -> u32 {
    const HASH: u32 = fnv1a(include_str!("../abi.rs").as_bytes());
    HASH
}

/// Rows per dweight block: pool shards start on multiples of it.
#[wasm_bindgen]
pub fn dg_block_rows() -> usize {
    kernel::DG_BLOCK_ROWS
}
