#!/usr/bin/env bash
# Benchmark (issue 40): Quarry's embedder against the Python onnxruntime reference on the same texts —
# chunks of a library, as an ingest embeds them — in one command; prints chunks/s and tokens/s of each,
# the ratio (≥ 1: Quarry at least as fast) and the cosine of the two engines' vectors.
#
#   scripts/bench-embedder.sh [LIBRARY] [CHUNKS]    (default: a fresh library of the sample 10-Q filings, 300)
#
# Installs its Python side (PyPI: onnxruntime 1.31.1 — the version whose libonnxruntime.so Quarry loads —,
# tokenizers, numpy) in a venv of its own, $QUARRY_BENCH_VENV or ~/.cache/quarry/bench-venv.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/env.sh
venv=${QUARRY_BENCH_VENV:-$HOME/.cache/quarry/bench-venv}
if ! "$venv/bin/python" -c "import onnxruntime, tokenizers, numpy" 2>/dev/null; then
  echo "installing the Python reference into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "onnxruntime==1.31.1" "tokenizers>=0.15,<1" "numpy>=1.26,<3"
fi
cargo build --locked --workspace --bin quarry >&2
quarry="$CARGO_TARGET_DIR/debug/quarry"
library="${1:-}"
data_args=()
if [ -z "$library" ]; then
  data=$(mktemp -d)
  trap 'rm -rf "$data"' EXIT
  data_args=(--data-dir "$data")
  library=bench
  "$quarry" "${data_args[@]}" library create "$library" >/dev/null
  "$quarry" "${data_args[@]}" add assets/sample-library/sec-10-q --library "$library" >/dev/null 2>&1
fi
"$quarry" "${data_args[@]}" eval embedder --library "$library" --chunks "${2:-300}" --python "$venv/bin/python" \
  --reference scripts/embed-reference.py
