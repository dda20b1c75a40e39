#!/usr/bin/env bash
# The main job, from a fresh Debian machine: set up, build, and run Quarry on the sample library.
# That is: create a library, ingest assets/sample-library/ (PDF, DOCX, XLSX, Markdown, a ZIP) into it
# (parse, chunk, embed with the local model, store in LanceDB + tantivy), show the passages hybrid search
# finds for a question, then ask the question: a research agent with the embedded GGUF model (no server,
# no network) writes an answer citing file and page. The library lives in
# $CARGO_TARGET_DIR/quickstart-data, so your own libraries are never touched; a second run skips the
# unchanged files. Another question: scripts/quickstart.sh "your question".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/env.sh
bash scripts/setup.sh
cargo build --locked --release -p quarry-cli
quarry="$CARGO_TARGET_DIR/release/quarry"
data="$CARGO_TARGET_DIR/quickstart-data"
question="${1:-What was NVIDIA's revenue in the first quarter of fiscal 2024?}"

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
"$quarry" --data-dir "$data" ask "$question" --library sample
