#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for this project, skipping whatever is already in place:
# Debian's wasm-capable Rust (rustc-web + rust-web-src + rust-web-llvm for rust-lld;
# build-std), Chromium, Firefox ESR and WebKit (MiniBrowser, WebKitWebDriver, Xvfb) for the
# browser tests, Slurm and munge for the cluster test, wasm-bindgen-cli at the crate's pinned version,
# wasm-pack at a pinned version, the npm packages; checks that each tool comes from what it
# installed (scripts/check-tools.sh); then builds the three wasm variants and the TypeScript.
# The list of tools and packages lives in scripts/tools.sh; the Debian packages are:
#   rustc-web cargo-web rust-web-llvm lld-22 chromium firefox-esr libwebkit2gtk-4.1-0 webkit2gtk-driver xvfb slurmctld slurmd slurm-client munge strace rust-web-src
# (test/setup-check.test.ts keeps this line equal to that list).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
source scripts/tools.sh

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# 1. Debian packages (see ../shared/TOOLCHAIN.md for why each is needed)
missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: apt-get install ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# A cargo for `cargo install` and the host tests: rustup's if present, else Debian's.
command -v cargo >/dev/null || export PATH="$PATH:/usr/bin"

# 2. wasm-bindgen-cli, the exact version the crate pins (they must match to the patch level)
WB_VERSION=$(wasm_bindgen_version)
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WB_VERSION" ]; then
  echo "setup: cargo install wasm-bindgen-cli $WB_VERSION" >&2
  # Not --locked: its lock file names a webpki-roots release the registry no longer serves.
  cargo install wasm-bindgen-cli --version "=$WB_VERSION" --quiet
fi

# 3. wasm-pack, pinned (from crates.io: the npm package downloads its binary from elsewhere)
if [ "$(wasm-pack --version 2>/dev/null | awk '{print $2}')" != "$WASM_PACK_VERSION" ]; then
  echo "setup: cargo install wasm-pack $WASM_PACK_VERSION" >&2
  cargo install wasm-pack --version "=$WASM_PACK_VERSION" --locked --quiet ||
    cargo install wasm-pack --version "=$WASM_PACK_VERSION" --quiet
fi

# Every tool the build and tests call must come from what this script installs.
bash scripts/check-tools.sh

# 4. npm packages. onnxruntime-node carries its CPU binary; its install script would only
#    fetch optional GPU files from outside the registry. The other engines the tests run the
#    package under come from here too, pinned in package.json: Bun and Deno (their npm
#    packages carry the binaries as per-platform optional dependencies) and puppeteer-core
#    (drives firefox-esr). Deno is pinned to a release whose every per-platform package the
#    registry serves: `npm ci` refuses a lock file missing any of them.
export ONNXRUNTIME_NODE_INSTALL=skip
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

# 5. build: wasm (build.sh) and TypeScript
npm run build
