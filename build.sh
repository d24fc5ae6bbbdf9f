#!/usr/bin/env bash
# Builds the WebAssembly variants of crate/ into wasm/<variant>/ with wasm-pack.
# Every compiler and linker flag the project uses is in this file.
#
#   simd                  SIMD128, ordinary (non-shared) memory: loads everywhere.
#   simd-threads          SIMD128 + atomics + shared memory: the worker pool's build.
#   simd-relaxed          simd plus relaxed SIMD, and
#   simd-relaxed-threads  simd-threads plus relaxed SIMD: chosen where the engine validates
#                         relaxed SIMD. Only the half-precision selects change (bitselect, three
#                         x86 instructions, becomes relaxed_laneselect, one); their masks are
#                         whole lanes, where the two give the same bits.
#   scalar                no SIMD: the fallback for engines without SIMD128, and the
#                         benchmark's "wasm-scalar" row.
#   bench-simd            simd plus the LayerNorm forward and the copy loop the benchmark
#                         compares against (feature bench-kernels), and its Rust peer
#                         (bench/rten-peer, wasm/bench-rten); not part of the package.
#   bench-relaxed         bench-simd with relaxed SIMD, built only when named, for
#                         bench/ab-builds.mjs (see its header).
#
# Usage: bash build.sh [variant ...]   (default: all but bench-relaxed)
set -euo pipefail
cd "$(dirname "$0")"

# Debian's rustc-web (1.96) is the Rust that can target wasm32 here: its std is compiled from
# /usr/lib/rustlib/src by -Z build-std. wasm-pack runs `cargo` from PATH, so /usr/bin goes
# first; wasm-pack and wasm-bindgen themselves live in ~/.cargo/bin.
export PATH="/usr/bin:$HOME/.cargo/bin:$PATH"
export RUSTC=/usr/bin/rustc
export RUSTC_BOOTSTRAP=1 # -Z build-std on a stable compiler

# The threads build's memory is shared, so its maximum is fixed at link time: 2 GiB.
MAX_MEMORY=$((2 * 1024 * 1024 * 1024))

# Panics abort at once, without formatting a message: the kernels return status codes and
# never panic (crate/src/bindings), and the message machinery was about 6 KiB of every build.
PANIC="-Zunstable-options -Cpanic=immediate-abort"
SIMD_FLAGS="-C target-feature=+simd128,+bulk-memory $PANIC"
RELAXED_FLAGS="-C target-feature=+simd128,+relaxed-simd,+bulk-memory $PANIC"
THREADS_LINK="-C link-arg=--shared-memory -C link-arg=--max-memory=$MAX_MEMORY -C link-arg=--import-memory \
 -C link-arg=--export=__wasm_init_tls -C link-arg=--export=__tls_size \
 -C link-arg=--export=__tls_align -C link-arg=--export=__tls_base"
THREADS_FLAGS="-C target-feature=+atomics,+bulk-memory,+mutable-globals,+simd128 $THREADS_LINK $PANIC"
RELAXED_THREADS_FLAGS="-C target-feature=+atomics,+bulk-memory,+mutable-globals,+simd128,+relaxed-simd $THREADS_LINK $PANIC"
SCALAR_FLAGS="-C target-feature=-simd128 $PANIC"

build() {
  local variant=$1 target=$2 flags=$3
  shift 3
  echo "== building wasm/$variant" >&2
  # A target dir per set of RUSTFLAGS: different flags would rebuild std every time.
  # The compiler's output is kept: a warning about this crate's own code fails the build (a
  # dead import or an unused result went unseen among the lines cargo prints for std).
  local log
  log=$(mktemp)
  if ! CARGO_TARGET_DIR="target/wasm-$target" RUSTFLAGS="$flags" \
    wasm-pack --quiet build crate --mode force --release --target web --no-pack \
      --out-dir "../wasm/$variant" --out-name rmsnorm_wasm \
      -- -Z build-std=std,panic_abort "$@" 2>"$log"; then
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  if grep -qE -- '--> (crate/)?src/' "$log"; then
    cat "$log" >&2
    rm -f "$log"
    echo "build.sh: the compiler warned about crate/src (above)" >&2
    return 1
  fi
  rm -f "$log"
  rm -f "wasm/$variant/.gitignore"
  fold_offsets "wasm/$variant/rmsnorm_wasm_bg.wasm"
  # The name, producers and target_features sections: read by nothing at run time.
  node scripts/strip-wasm.mjs "wasm/$variant/rmsnorm_wasm_bg.wasm"
}

# Constant address offsets folded into the loads and stores. LLVM leaves `base + 16` as an
# i32.add before each v128.load in the unrolled loops (its loop strength reduction drops the
# no-wrap flag the fold needs: https://github.com/llvm/llvm-project/issues/187367), and V8
# then spends an add per access; with the offsets in the instructions the float32 forward runs
# 10-25% faster on rows in cache. Binaryen (the `binaryen` dev dependency: only this one pass,
# no other optimization) may fold `x + C` when the low 1 KiB of memory is never addressed: a
# Rust module's stack ends there (it grows down from 1 MiB), so a sum that wrapped below 1 KiB
# was never a valid access. The kernels' arithmetic is untouched: the same bits.
fold_offsets() {
  node node_modules/binaryen/bin/wasm-opt "$1" --low-memory-unused \
    --optimize-added-constants -o "$1"
}

# The benchmark's Rust peer (bench/rten-peer: rten-vecmath's RMSNorm), a plain cdylib with raw
# exports: cargo alone, the simd build's flags.
build_rten() {
  echo "== building wasm/bench-rten" >&2
  (cd bench/rten-peer && CARGO_TARGET_DIR="../../target/wasm-rten" RUSTFLAGS="$SIMD_FLAGS" \
    cargo build --quiet --release --locked --target wasm32-unknown-unknown -Z build-std=std,panic_abort)
  mkdir -p wasm/bench-rten
  cp target/wasm-rten/wasm32-unknown-unknown/release/rten_peer.wasm wasm/bench-rten/rten_peer.wasm
}

variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(simd simd-threads simd-relaxed simd-relaxed-threads scalar bench-simd)
for v in "${variants[@]}"; do
  case "$v" in
    simd) build simd simd "$SIMD_FLAGS" ;;
    simd-threads) build simd-threads simd-threads "$THREADS_FLAGS" --features threads ;;
    simd-relaxed) build simd-relaxed relaxed "$RELAXED_FLAGS" ;;
    simd-relaxed-threads) build simd-relaxed-threads relaxed-threads "$RELAXED_THREADS_FLAGS" --features threads ;;
    # The fallback for engines without SIMD128, optimized for size: with opt-level 3 its
    # unrolled scalar loops made it the one build over 64 KiB gzipped.
    scalar) CARGO_PROFILE_RELEASE_OPT_LEVEL=s build scalar scalar "$SCALAR_FLAGS" ;;
    bench-simd)
      build bench-simd simd "$SIMD_FLAGS" --features bench-kernels
      build_rten ;;
    bench-relaxed) build bench-relaxed relaxed "$RELAXED_FLAGS" --features bench-kernels ;;
    *) echo "unknown variant: $v (simd, simd-threads, simd-relaxed, simd-relaxed-threads, scalar, bench-simd, bench-relaxed)" >&2; exit 2 ;;
  esac
done
