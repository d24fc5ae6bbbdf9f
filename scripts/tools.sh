# The external tools this project builds and tests with, and where each comes from: the one
# list that scripts/setup.sh installs from and scripts/check-tools.sh verifies against.
# Sourced, not run.

# "program:Debian package". A program given as an absolute path is checked there; a bare name
# is resolved on PATH with /usr/bin first (as build.sh runs it). "program:A>B": the program's
# path belongs to package A and the file its symlinks resolve to belongs to package B.
DEB_TOOLS=(
  /usr/bin/rustc:rustc-web        # the rustc that can target wasm32 (1.96; builds std from source)
  /usr/bin/cargo:cargo-web        # its cargo (build.sh puts /usr/bin first for wasm-pack)
  # The default wasm32 linker. /usr/bin/rust-lld (rust-web-llvm, only a Recommends of
  # rustc-web) is a symlink to lld-22, a package rust-web-llvm does not depend on.
  'rust-lld:rust-web-llvm>lld-22'
  chromium:chromium               # the browser tests (driven by playwright-core)
  # Firefox for the browser tests, driven by puppeteer-core over WebDriver BiDi (Playwright's
  # Firefox is a patched build of its own that cannot be downloaded here; Debian's ESR is stock).
  firefox-esr:firefox-esr
  # WebKit (Safari's engine) for the browser tests: WebKitGTK's MiniBrowser, its W3C WebDriver
  # server, and an X server to show it on (MiniBrowser has no headless mode).
  /usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser:libwebkit2gtk-4.1-0
  WebKitWebDriver:webkit2gtk-driver
  Xvfb:xvfb
  # A one-machine Slurm for the test that runs the documented job array under the real
  # scheduler (its signals, cancels and resubmits), and munge, its authentication daemon.
  /usr/sbin/slurmctld-wlm:slurmctld
  /usr/sbin/slurmd-wlm:slurmd
  sbatch:slurm-client
  munged:munge
  # The test that kills a run at each rename of a quantized output's pair (strace's fault
  # injection stops the process at that very system call, not at a guessed moment).
  strace:strace
)
# Packages with no program of their own to check: the std sources -Z build-std compiles.
DEB_EXTRA=(rust-web-src)
RUST_SRC=/usr/lib/rustlib/src/rust/library

# Every Debian package setup.sh installs.
DEB_PACKAGES=()
for _t in "${DEB_TOOLS[@]}"; do
  _p=${_t##*:}
  DEB_PACKAGES+=("${_p%%>*}")
  [[ $_p != *'>'* ]] || DEB_PACKAGES+=("${_p##*>}")
done
DEB_PACKAGES+=("${DEB_EXTRA[@]}")
unset _t _p

RUSTC_WEB_VERSION=1.96
WASM_PACK_VERSION=0.15.1

# wasm-bindgen-cli must equal the crate's pinned wasm-bindgen to the patch level.
wasm_bindgen_version() {
  sed -n 's/^wasm-bindgen = "=\(.*\)"/\1/p' crate/Cargo.toml
}
