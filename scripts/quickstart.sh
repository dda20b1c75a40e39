#!/usr/bin/env bash
# The main job, from a fresh Debian machine: set up, build, and run Quarry on the sample library.
# Today that is ingestion: parse every document of assets/sample-library/ (PDF, DOCX, XLSX, Markdown, a ZIP)
# and print what was read, per format; the per-file report goes to $CARGO_TARGET_DIR/sample-report.tsv.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/env.sh
bash scripts/setup.sh
cargo build --locked --release -p quarry-cli
quarry="$CARGO_TARGET_DIR/release/quarry"
report="$CARGO_TARGET_DIR/sample-report.tsv"
echo
echo "== quarry parse assets/sample-library"
"$quarry" parse assets/sample-library --report "$report"
echo
echo "first rows of the report:"
head -n 6 "$report" | cut -c1-160
