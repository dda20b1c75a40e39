#!/usr/bin/env python3
"""Replays DeepSearch's final ordering of kept passages offline, from `quarry eval qa --trace` files.

For every DeepSearch question of the traces that had a reflection, the passages the answer was written
from (`used`) are re-ordered three ways and scored by supporting-passage Recall@5:
  - as run (the order in the trace);
  - the question's protected hits (its first three kept hits) first, then the rest by their rank in a
    hybrid search for "question + facts of the last reflection" (what `order_by_facts` does);
  - the same with the question alone as the ordering query (a control: is it the facts that help?).
The ordering searches are run by `quarry eval retrieval --rankings` over a made-up query set whose
corpus is the evaluation set's; fusion is replayed here as min-max with equal weights, 50 candidates
per side (`minmax`, the default fusion when the traces it was written for were made; the default is
`minmax-confidence` since 2026-11-25).

Usage: scripts/studies/replay-ordering.py QUARRY_BINARY SET_DIR TRACE.jsonl [TRACE.jsonl …]
Prints one line per trace file and one for all of them.
"""

import json
import os
import subprocess
import sys
import tempfile


def minmax(ranked, depth=50):
    ranked = ranked[:depth]
    if not ranked:
        return {}
    scores = [s for _, s in ranked]
    lo, hi = min(scores), max(scores)
    return {i: (s - lo) / (hi - lo) if hi > lo else 1.0 for i, s in ranked}


def fused(line):
    bm25, dense = minmax(line["bm25"]), minmax(line["dense"])
    return sorted(set(bm25) | set(dense), key=lambda i: -(0.5 * bm25.get(i, 0) + 0.5 * dense.get(i, 0)))


def recall5(order, supporting):
    return len(supporting & set(order[:5])) / len(supporting)


def normalise(q):
    return " ".join(q.split()).lower()


def main():
    binary, set_dir, traces = sys.argv[1], sys.argv[2], sys.argv[3:]
    runs = []  # (trace file, question record)
    for path in traces:
        for line in open(path):
            d = json.loads(line)
            if d["agent"] == "deep" and any(refl[0] for refl in d.get("reflections", [])) and not d.get("error"):
                runs.append((path, d))
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(os.path.abspath(os.path.join(set_dir, "corpus.jsonl")), os.path.join(tmp, "corpus.jsonl"))
        with open(os.path.join(tmp, "queries.jsonl"), "w") as q, open(os.path.join(tmp, "qrels.tsv"), "w") as r:
            r.write("query-id\tcorpus-id\tscore\n")
            for n, (_, d) in enumerate(runs):
                # The last reflection that noted facts (one that notes none keeps the earlier ones).
                facts = next((refl[0] for refl in reversed(d["reflections"]) if refl[0]), [])
                for kind, text in (("facts", d["question"] + " " + " ".join(facts)), ("question", d["question"])):
                    q.write(json.dumps({"_id": f"{n}|{kind}", "text": text}) + "\n")
                    for s in d["supporting"]:
                        r.write(f"{n}|{kind}\t{s}\t1\n")
        rankings = os.path.join(tmp, "rankings.jsonl")
        subprocess.run([binary, "eval", "retrieval", "--set", tmp, "--vector-cache", "--rankings", rankings],
                       check=True, stdout=subprocess.DEVNULL)
        ranked = {d["query_id"]: fused(d) for d in map(json.loads, open(rankings))}
    totals = {}
    for n, (path, d) in enumerate(runs):
        supporting, used = set(d["supporting"]), d["used"]
        own = [s for s in d["searches"] if normalise(s[0]) == normalise(d["question"])]
        protected = [p for p in (own[0][1] if own else [])[:3] if p in used]
        row = totals.setdefault(path, [0, 0.0, 0.0, 0.0, 0, 0])
        row[0] += 1
        row[1] += recall5(used, supporting)
        for slot, kind in ((2, "facts"), (3, "question")):
            place = {p: i for i, p in enumerate(ranked[f"{n}|{kind}"])}
            rest = sorted((p for p in used if p not in protected), key=lambda p: (place.get(p, 10**6), used.index(p)))
            score = recall5(protected + rest, supporting)
            row[slot] += score
            if kind == "facts":
                row[4] += score > recall5(used, supporting)
                row[5] += score < recall5(used, supporting)
    print("| trace | questions | R@5 as run | question + facts | question alone | up | down |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    all_rows = [0, 0.0, 0.0, 0.0, 0, 0]
    for path, row in totals.items():
        print(f"| {os.path.basename(path)} | {row[0]} | {row[1]/row[0]:.3f} | {row[2]/row[0]:.3f} | {row[3]/row[0]:.3f} | {row[4]} | {row[5]} |")
        all_rows = [a + b for a, b in zip(all_rows, row)]
    if len(totals) > 1:
        n = all_rows[0]
        print(f"| all | {n} | {all_rows[1]/n:.3f} | {all_rows[2]/n:.3f} | {all_rows[3]/n:.3f} | {all_rows[4]} | {all_rows[5]} |")


if __name__ == "__main__":
    main()
