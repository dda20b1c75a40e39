#!/usr/bin/env bash
# Sets up a fresh Debian machine and runs every test of the workspace (crates and the Tauri app).
# Integration tests read real documents from ../shared/eval (or $QUARRY_EVAL_DIR) and model files from
# assets/models/ (installed by scripts/setup.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/env.sh
# Qwen2.5-Coder-1.5B too: the quick start's end-to-end test asks with it.
QUARRY_WITH_QWEN=1 bash scripts/setup.sh
cargo test --locked --workspace
