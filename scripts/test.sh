#!/usr/bin/env bash
# Sets up a fresh Debian machine and runs every test of the workspace (crates and the Tauri app).
# Integration tests read real documents from ../shared/eval (or $QUARRY_EVAL_DIR) and model files from
# assets/models/ (installed by scripts/setup.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/env.sh
# Set-up installs the default answer model, Qwen2.5-Coder-1.5B (the quick start's end-to-end test and the
# .deb test answer with it); the other tests that answer pin SmolLM2-135M through QUARRY_LLM_MODEL_FILE.
bash scripts/setup.sh
# The tree stays rustfmt-clean (rustfmt.toml); a formatting slip fails here in a second, before the build.
# (rustfmt ships with rustup's default toolchain; where it is missing and cannot be fetched, say so.)
if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --all --check
else
  echo "test.sh: rustfmt is not installed (rustup component add rustfmt): formatting not checked" >&2
fi
# Clippy's default lints and the workspace's own (Cargo.toml [workspace.lints]: no unwrap outside tests)
# hold for every crate, binary and test: a new warning fails here, before the tests run.
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --locked --workspace --all-targets -- -D warnings
else
  echo "test.sh: clippy is not installed (rustup component add clippy): lints not checked" >&2
fi
# The developer docs build without a broken link: a citation marker "[2]" or a "<date>" placeholder in
# a docstring is written as code (25 s after clippy, whose dependency metadata it reuses).
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --workspace --document-private-items
# Every repository path README.md and docs/ name in backticks exists (moved files update their mentions).
python3 scripts/check-doc-paths.py
# cargo-nextest runs the tests: each in its own process, from one queue across the test binaries, the
# slowest first (.config/nextest.toml); per-test seconds land in target/nextest/ci/junit.xml. The machine's
# toolchain usually has it; otherwise it is built from crates.io into the tools folder (a few minutes).
tools=${QUARRY_TOOLS_DIR:-$HOME/.cache/quarry/tools}
export PATH="$tools/bin:$PATH"
if ! cargo nextest --version >/dev/null 2>&1; then
  echo "test.sh: installing cargo-nextest 0.9.143 into $tools" >&2
  cargo install --quiet --locked cargo-nextest --version 0.9.143 --root "$tools"
fi
cargo nextest run --locked --workspace --profile ci
# Nextest does not run documentation examples; `cargo test --doc` does (none is written today: it
# finds none in a second).
cargo test --locked --workspace --doc
