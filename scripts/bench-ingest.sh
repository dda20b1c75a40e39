#!/usr/bin/env bash
# Benchmark: ingest a folder end to end with the quick start's build (the dev profile of the root
# Cargo.toml; PROFILE=release for a release build) — parse in worker processes, chunk, commit to LanceDB +
# tantivy (searchable by keyword), then embed, compact — into a fresh library, and print a Markdown table:
# documents, pages, chunks, seconds until every document was searchable by keyword and pages/s to that
# point, wall time, pages/s, chunks/s, peak RSS of the main process, size of the library on disk against
# the extracted text; then search latency (p50/p95 per mode) on that library with the evaluation questions
# of C_private_library.
#
# When the folder's parent has question sets (`qna/*/queries.jsonl` + `qrels.tsv` naming documents by
# path, as C_private_library does), also prints each set's document-level recall (`quarry eval library`).
#
#   scripts/bench-ingest.sh [FOLDER]     (default: ../shared/eval/C_private_library/docs)
#   CHUNK_TOKENS=512 scripts/bench-ingest.sh    chunk size of the library (default 256, as `library create`)
#   QUARRY=path/to/quarry scripts/bench-ingest.sh    another build (e.g. an older commit's), not rebuilt
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/env.sh
folder="${1:-../shared/eval/C_private_library/docs}"
[ -d "$folder" ] || { echo "no folder $folder" >&2; exit 1; }
if [ -n "${QUARRY:-}" ]; then
  quarry="$QUARRY"
elif [ "${PROFILE:-dev}" = release ]; then
  cargo build --locked --release --workspace --bin quarry >&2
  quarry="$CARGO_TARGET_DIR/release/quarry"
else
  cargo build --locked --workspace --bin quarry >&2
  quarry="$CARGO_TARGET_DIR/debug/quarry"
fi
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
"$quarry" --data-dir "$data" library create bench --chunk-tokens "${CHUNK_TOKENS:-256}" >/dev/null
/usr/bin/time -v -o "$data/time.txt" "$quarry" --data-dir "$data" add "$folder" --library bench --json > "$data/events.jsonl"
"$quarry" --data-dir "$data" status --library bench --json > "$data/status.json"
source_bytes=$(du -sb "$folder" | cut -f1)
python3 - "$data" "$source_bytes" "$folder" <<'EOF'
import json, sys
data, source_bytes, folder = sys.argv[1], int(sys.argv[2]), sys.argv[3]
events = [json.loads(l) for l in open(f"{data}/events.jsonl") if l.strip()]
finished = next(e for e in reversed(events) if e.get("event") == "finished")
status = json.load(open(f"{data}/status.json"))
time = open(f"{data}/time.txt").read()
rss_kb = int(next(l for l in time.splitlines() if "Maximum resident" in l).split(":")[1])
docs = status["documents"]
secs = finished["seconds"]
print(f"ingest of {folder} ({source_bytes / 2**20:.1f} MiB of files)\n")
# Until every document read was searchable by keyword: the `keyword_ready` event (older builds, which
# embedded before committing, have none: searchable by keyword only as each group was embedded).
ready = next((e for e in events if e.get("event") == "keyword_ready"), None)
keyword_s = f"{ready['seconds']:.1f}" if ready else "–"
keyword_rate = f"{status['pages'] / ready['seconds']:.1f}" if ready and ready["seconds"] > 0 else "–"
print("| documents indexed | failed | pages | chunks | text MiB | keyword-searchable after s | pages/s to that | wall s | pages/s | chunks/s | peak RSS MiB | library MiB | library / text |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
text_mib = status["text_chars"] / 2**20
disk_mib = status["disk_bytes"] / 2**20
print(f"| {docs.get('indexed', 0)} | {docs.get('failed', 0)} | {status['pages']} | {status['chunks']} | {text_mib:.1f} | {keyword_s} | {keyword_rate} | {secs:.0f} | "
      f"{status['pages'] / secs:.1f} | {status['chunks'] / secs:.1f} | {rss_kb / 1024:.0f} | {disk_mib:.1f} | {disk_mib / max(text_mib, 1e-9):.1f}× |")
print("\n(text MiB counts extracted characters as 1 byte each; the library holds text, 384 float32 per chunk and the BM25 index)")
if "embed_seconds" in finished:
    parts = [("until searchable by keyword (scan, parse, chunk, commit)", finished["keyword_seconds"]),
             ("embedding model", finished["embed_seconds"]),
             ("writing the vectors (merge-insert, tantivy commit, states)", finished["embed_write_seconds"]),
             ("compaction and index upkeep", finished["optimize_seconds"])]
    print("\n| where the time went | s | share |\n|---|---:|---:|")
    for name, s in parts:
        print(f"| {name} | {s:.1f} | {s / secs:.0%} |")
    rest = secs - sum(s for _, s in parts)
    print(f"| other | {rest:.1f} | {rest / secs:.0%} |")
for path, reason in status["failures"][:20]:
    print(f"failed: {path}: {reason}")
EOF
queries="${QUERIES:-$(dirname "$folder")/qna/sec-10-q/queries.jsonl}"
if [ -f "$queries" ]; then
  echo
  "$quarry" --data-dir "$data" eval latency --library bench --queries "$queries" --query-count 200
fi
for set in "$(dirname "$folder")"/qna/*/; do
  if [ -f "$set/qrels.tsv" ]; then
    echo
    "$quarry" --data-dir "$data" eval library --library bench --set "$set"
  fi
done
