#!/usr/bin/env python3
"""Scores hybrid fusions offline, from the rankings `quarry eval retrieval --rankings` and `quarry eval
library --rankings` write (each query's BM25 and dense lists before fusion).

Every fusion is replayed as `crates/quarry-index/src/fusion.rs` computes it: each list cut to 50
candidates, min-max scaled over those, an id missing from a list scores 0 there, ties in first-seen order
(BM25's list first); queries whose dump says `"fused": false` (mostly-CJK questions under an English
model) are ranked by BM25 alone, as hybrid search does. Measures: Recall@5 and nDCG@10 for passage sets
(binary relevance, as `quarry eval retrieval`), document recall@5 and @10 for a library dump (entries
[chunk id, score, path], as `quarry eval library`). A cell is marked ✗ when it is below the better of
BM25 and dense on either measure.

Usage: scripts/studies/fusion-study.py [--grid] DUMP.jsonl [DUMP.jsonl …]
  --grid   also the slope/offset grid of minmax-confidence (w_dense = σ(a·(z_dense − z_bm25) + c)).
"""

import json
import math
import os
import sys

DEPTH = 50


def min_max(ranking):
    if not ranking:
        return {}
    scores = [s for _, s in ranking]
    lo, hi = min(scores), max(scores)
    return {i: (s - lo) / (hi - lo) if hi - lo > 1e-7 else 1.0 for i, s in ranking}


def combine(bm25, dense, dense_weight):
    nb, nd = min_max(bm25), min_max(dense)
    ids = list(dict.fromkeys([i for i, _ in bm25] + [i for i, _ in dense]))
    score = {i: (1 - dense_weight) * nb.get(i, 0.0) + dense_weight * nd.get(i, 0.0) for i in ids}
    return sorted(ids, key=lambda i: -score[i])


def top_score_z(ranking):
    if len(ranking) < 2:
        return 0.0
    scores = [s for _, s in ranking]
    mean = sum(scores) / len(scores)
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    return (scores[0] - mean) / sd if sd > 1e-7 else 0.0


def min_max_confidence(ranking):
    if len(ranking) < 2:
        return 0.0
    normalised = min_max(ranking)
    following = [normalised[i] for i, _ in ranking[1:10]]
    return 1 - sum(following) / len(following)


def confidence_weight(slope, offset):
    return lambda b, d: 1 / (1 + math.exp(-(slope * (top_score_z(d) - top_score_z(b)) + offset)))


def adaptive_weight(b, d):
    cb, cd = min_max_confidence(b), min_max_confidence(d)
    return cd / (cb + cd) if cb + cd > 0 else 0.5


def fusions(grid):
    named = {"bm25": None, "dense": None}
    for weight in (0.5, 0.6, 0.7):
        named["minmax" if weight == 0.5 else f"minmax:{weight}"] = lambda b, d, w=weight: w
    named["minmax-adaptive"] = adaptive_weight
    named["minmax-confidence"] = confidence_weight(0.5, 0.4)
    if grid:
        for offset in (0.2, 0.4, 0.6, 0.8):
            for slope in (0.25, 0.5, 0.75, 1.0):
                named[f"confidence a={slope} c={offset}"] = confidence_weight(slope, offset)
    return named


def passage_measures(ranked, row):
    relevant = set(row["relevant"])
    recall5 = sum(1 for i in ranked[:5] if i in relevant) / max(1, len(relevant))
    dcg = sum(1 / math.log2(k + 2) for k, i in enumerate(ranked[:10]) if i in relevant)
    ideal = sum(1 / math.log2(k + 2) for k in range(min(10, len(relevant))))
    return recall5, dcg / ideal if ideal else 0.0


def document_measures(ranked, row):
    def found(k):
        paths = [row["paths"][i] for i in ranked[:k]]
        hits = sum(any(p == r or p.endswith("/" + r.lstrip("./")) for p in paths) for r in row["relevant"])
        return hits / max(1, len(row["relevant"]))
    return found(5), found(10)


def load(path):
    rows = [json.loads(line) for line in open(path, encoding="utf-8")]
    rows = [r for r in rows if r.get("relevant")]
    library = any(len(h) == 3 for r in rows for h in r["bm25"] + r["dense"])
    for r in rows:
        if library:
            r["paths"] = {h[0]: h[2] for h in r["bm25"] + r["dense"]}
        r["bm25"] = [(h[0], h[1]) for h in r["bm25"][:DEPTH]]
        r["dense"] = [(h[0], h[1]) for h in r["dense"][:DEPTH]]
    return rows, document_measures if library else passage_measures


def score(rows, measure, name, weight):
    totals = [0.0, 0.0]
    for r in rows:
        if name == "dense":
            ranked = [i for i, _ in r["dense"]]
        elif name == "bm25" or not r["fused"]:
            ranked = [i for i, _ in r["bm25"]]
        else:
            ranked = combine(r["bm25"], r["dense"], weight(r["bm25"], r["dense"]))
        a, b = measure(ranked, r)
        totals[0] += a
        totals[1] += b
    return totals[0] / len(rows), totals[1] / len(rows)


def main(argv):
    grid = "--grid" in argv
    paths = [a for a in argv if a != "--grid"]
    if not paths:
        sys.exit(__doc__)
    named = fusions(grid)
    columns = {}
    for path in paths:
        rows, measure = load(path)
        columns[os.path.basename(path).removesuffix(".jsonl")] = {n: score(rows, measure, n, w) for n, w in named.items()}
    print("| fusion | " + " | ".join(columns) + " | ✗ |")
    print("|---|" + "---:|" * (len(columns) + 1))
    for name in named:
        cells, failures = [], 0
        for results in columns.values():
            first, second = results[name]
            best = [max(results["bm25"][k], results["dense"][k]) for k in (0, 1)]
            below = name not in ("bm25", "dense") and (first < best[0] - 1e-9 or second < best[1] - 1e-9)
            failures += below
            cells.append(f"{first:.3f} / {second:.3f}{' ✗' if below else ''}")
        print(f"| {name} | " + " | ".join(cells) + f" | {failures} |")


if __name__ == "__main__":
    main(sys.argv[1:])
