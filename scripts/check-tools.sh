#!/usr/bin/env bash
# Checks that every external program the build and the tests call comes from something
# scripts/setup.sh installs, so that a tool installed by hand on one machine cannot hide a
# missing install step (a green CI on a used machine once hid `rust-web-llvm`).
#
#   Debian binaries: the resolved path must belong (dpkg -S) to the package setup.sh names.
#   cargo-installed tools: the version must be the one setup.sh pins.
#
# Exits 1 naming each program that fails and the package it must come from.
# Usage: bash scripts/check-tools.sh   (setup.sh runs it after installing)
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/tools.sh
source scripts/tools.sh

fail=0
bad() {
  echo "check-tools: $1" >&2
  fail=1
}

owner_of() { dpkg -S "$1" 2>/dev/null | head -n1 | cut -d: -f1; }

# program -> Debian package: the file the program resolves to must be dpkg's, from that
# package. With "A>B", the program's own path must be A's and the resolved file B's.
check_deb() {
  local prog=$1 spec=$2 path real owner
  local first=${spec%%>*} last=${spec##*>}
  if [[ $prog == /* ]]; then path=$prog; else path=$(PATH="/usr/bin:$PATH" command -v "$prog" 2>/dev/null || true); fi
  if [ -z "$path" ] || [ ! -L "$path" -a ! -e "$path" ]; then
    bad "$prog not found; it comes from the Debian package $first (scripts/setup.sh installs it)"
    return
  fi
  if [ "$first" != "$last" ]; then
    owner=$(owner_of "$path")
    [ "$owner" = "$first" ] ||
      bad "$prog ($path) belongs to '${owner:-no Debian package}', expected the Debian package $first (scripts/setup.sh installs it)"
  fi
  real=$(readlink -f "$path")
  if [ ! -e "$real" ]; then
    bad "$prog ($path) is a broken link to $real, which comes from the Debian package $last (scripts/setup.sh installs it)"
    return
  fi
  owner=$(owner_of "$real")
  [ -n "$owner" ] || owner=$(owner_of "$path")
  [ "$owner" = "$last" ] ||
    bad "$prog ($real) belongs to '${owner:-no Debian package}', expected the Debian package $last (scripts/setup.sh installs it)"
}

# Each entry of DEB_TOOLS is "program:package" (scripts/tools.sh).
for entry in "${DEB_TOOLS[@]}"; do
  check_deb "${entry%%:*}" "${entry##*:}"
done

# The wasm32 std sources that -Z build-std compiles.
if [ ! -d "$RUST_SRC" ]; then
  bad "$RUST_SRC (std sources for -Z build-std) not found; it comes from the Debian package rust-web-src (scripts/setup.sh installs it)"
else
  check_deb "$RUST_SRC/Cargo.lock" rust-web-src
fi

# cargo-installed tools, at the versions setup.sh pins.
export PATH="$HOME/.cargo/bin:$PATH"
wb=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')
[ "$wb" = "$(wasm_bindgen_version)" ] ||
  bad "wasm-bindgen is '${wb:-missing}', expected $(wasm_bindgen_version) (cargo install wasm-bindgen-cli --version =$(wasm_bindgen_version); scripts/setup.sh does)"
wp=$(wasm-pack --version 2>/dev/null | awk '{print $2}')
[ "$wp" = "$WASM_PACK_VERSION" ] ||
  bad "wasm-pack is '${wp:-missing}', expected $WASM_PACK_VERSION (cargo install wasm-pack --version =$WASM_PACK_VERSION; scripts/setup.sh does)"

# The rustc the wasm build uses must be Debian's (rustup's has no wasm32 std here).
rv=$(/usr/bin/rustc --version 2>/dev/null | awk '{print $2}')
[[ $rv == "$RUSTC_WEB_VERSION"* ]] ||
  bad "/usr/bin/rustc is '${rv:-missing}', expected $RUSTC_WEB_VERSION from the Debian package rustc-web (scripts/setup.sh installs it)"

if [ $fail -ne 0 ]; then
  echo "check-tools: FAILED (see above); run: bash scripts/setup.sh" >&2
  exit 1
fi
echo "check-tools: ok (rustc $rv, rust-lld, rust-src, chromium, firefox-esr, WebKit, Xvfb from Debian; wasm-bindgen $wb, wasm-pack $wp)" >&2
