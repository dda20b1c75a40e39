# Sourced by the other scripts: where builds and caches go.
# CARGO_TARGET_DIR defaults to a cache folder outside the checkout, so fresh clones (and CI runs on the
# same machine) reuse one build instead of compiling lancedb & co. again.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/quarry/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# Spinning OpenMP threads collapse throughput on a busy 2-core machine (see shared MODELS.md).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
# Python with xllamacpp (scripts/setup.sh), which the tests use to serve a GGUF over the OpenAI API.
export QUARRY_PYTHON="${QUARRY_PYTHON:-${XDG_CACHE_HOME:-$HOME/.cache}/quarry/venv/bin/python}"
# Model files and native libraries unpacked by scripts/setup.sh. Set explicitly because a binary built in
# another clone that shares CARGO_TARGET_DIR may carry that clone's path as its compiled-in default.
export QUARRY_MODELS_DIR="${QUARRY_MODELS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/assets/models}"
export QUARRY_TAURI_DRIVER="${QUARRY_TAURI_DRIVER:-${QUARRY_TOOLS_DIR:-$HOME/.cache/quarry/tools}/bin/tauri-driver}"
