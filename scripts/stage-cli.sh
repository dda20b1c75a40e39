#!/usr/bin/env bash
# Tauri's beforeBundleCommand (tauri.conf.json; Tauri runs it in ui/): puts the `quarry` CLI where the .deb takes it from
# (bundle.linux.deb.files: /usr/bin/quarry <- target-bundle/quarry), from the same build profile as the
# app being bundled (TAURI_ENV_DEBUG=true: debug). The binary is built if the build did not make it
# already (`cargo test --workspace`, `cargo build --workspace` and README's `tauri build -- --workspace` do;
# with `-- -p quarry-app` this build resolves the workspace's features instead of the app's and compiles
# LanceDB and DataFusion a second time). A debug binary is stripped of
# symbols for the package (≈ 0.53 GB → 0.34 GB); a release binary is taken as built.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
[ "${TAURI_ENV_DEBUG:-false}" = true ] && profile=debug
target="${CARGO_TARGET_DIR:-target}"
binary="$target/$profile/quarry"
if [ ! -x "$binary" ]; then
  flags=(--locked --workspace --bin quarry)
  [ "$profile" = release ] && flags+=(--release)
  cargo build "${flags[@]}"
fi
mkdir -p target-bundle
if [ "$profile" = debug ]; then
  strip -s -o target-bundle/quarry "$binary"
else
  cp "$binary" target-bundle/quarry
fi
echo "staged $binary as target-bundle/quarry for the package"
