#!/usr/bin/env python3
"""What a document-level keyword score would do for a library whose documents share their wording (an
offline experiment, not what Quarry runs).

Chunks of SEC filings rarely name their company ("the Company", "we"), so BM25 ranks the right paragraph
of the wrong company first. Here each document's whole text is scored for the question with BM25
(k1 = 1.2, b = 0.75, lowercased words, English stop words dropped, no stemming; text from `pdftotext`,
poppler-utils), the document scores are min-max scaled over the library's documents, and λ times the
chunk's document score is added to the chunk's min-max scaled BM25 score. The re-scored BM25 list is
then fused with the dense list by the default fusion (`minmax-confidence`, as scripts/studies/fusion-study.py
replays it). Only the chunks already in BM25's top 50 are re-ordered; none are added.

When every document is one chunk (the A_benchmarks sets), the prior is the chunk's own score again, and
min-max scaling makes the fused ranking identical, so the experiment only speaks about real libraries.

Usage: scripts/studies/document-prior-study.py DOCS_DIR QUERIES.jsonl RANKINGS.jsonl [RANKINGS.jsonl …]
  DOCS_DIR        the library's PDFs (e.g. ../shared/eval/C_private_library/docs/en_sec-10-q)
  QUERIES.jsonl   the question set's queries (…/qna/sec-10-q/queries.jsonl)
  RANKINGS.jsonl  `quarry eval library --rankings` output of a library built from DOCS_DIR
Prints document recall@5 / @10 of BM25 and of hybrid for λ = 0, 0.25, 0.5, 1.
"""

import collections
import importlib.util
import json
import math
import os
import re
import subprocess
import sys

STOP_WORDS = set(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
    "they this to was will with what how has have had does did do any over which from its who whom when where "
    "why can your our we you been being were than also more most much many".split()
)


def words(text):
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP_WORDS]


def document_terms(folder):
    terms = {}
    for name in sorted(os.listdir(folder)):
        if name.lower().endswith(".pdf"):
            text = subprocess.run(["pdftotext", "-q", os.path.join(folder, name), "-"], capture_output=True, text=True).stdout
            terms[name] = collections.Counter(words(text))
    return terms


def document_scores(question, terms, k1=1.2, b=0.75):
    n = len(terms)
    average = sum(sum(c.values()) for c in terms.values()) / n
    frequency = collections.Counter(t for c in terms.values() for t in c)
    scores = {}
    for name, counts in terms.items():
        length = sum(counts.values())
        score = 0.0
        for term in set(words(question)):
            if term in counts:
                idf = math.log(1 + (n - frequency[term] + 0.5) / (frequency[term] + 0.5))
                tf = counts[term]
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))
        scores[name] = score
    lo, hi = min(scores.values()), max(scores.values())
    return {name: (s - lo) / (hi - lo) if hi > lo else 0.0 for name, s in scores.items()}


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    spec = importlib.util.spec_from_file_location("fusion_study", os.path.join(os.path.dirname(__file__), "fusion-study.py"))
    study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study)
    terms = document_terms(argv[0])
    questions = {json.loads(line)["_id"]: json.loads(line)["text"] for line in open(argv[1], encoding="utf-8")}
    fusion_weight = study.confidence_weight(0.5, 0.4)
    for path in argv[2:]:
        rows, measure = study.load(path)
        print(os.path.basename(path))
        for weight in (0.0, 0.25, 0.5, 1.0):
            totals = {"bm25": [0.0, 0.0], "hybrid": [0.0, 0.0]}
            for row in rows:
                prior = document_scores(questions[row["query_id"]], terms)
                scaled = study.min_max(row["bm25"])
                bm25 = sorted(
                    ((i, scaled[i] + weight * prior.get(os.path.basename(row["paths"][i]), 0.0)) for i, _ in row["bm25"]),
                    key=lambda h: -h[1],
                )
                for name, ranked in (
                    ("bm25", [i for i, _ in bm25]),
                    ("hybrid", study.combine(bm25, row["dense"], fusion_weight(bm25, row["dense"]))),
                ):
                    at5, at10 = measure(ranked, row)
                    totals[name][0] += at5
                    totals[name][1] += at10
            n = len(rows)
            print(
                f"  λ = {weight}: bm25 {totals['bm25'][0] / n:.3f} / {totals['bm25'][1] / n:.3f}, "
                f"hybrid {totals['hybrid'][0] / n:.3f} / {totals['hybrid'][1] / n:.3f}"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
