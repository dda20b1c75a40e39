#!/usr/bin/env python3
"""Whether a question's form shows that it needs several hops: how many questions of each set a test of
two forms matches — a noun phrase with a relative clause ("the band who released …", "the company
that …") or a choice between two named things ("… A or B?", "are A and B both …").

A rule router would send what it matches to DeepSearch. Run on 2026-12-06 over the first 30 HotpotQA
and MuSiQue questions and all 98 sec-10-q ones it matched 11, 17 and 0 (docs/evaluation/results.md):
it keeps the filings' questions on NaiveRAG but finds only about half of the multi-hop ones.

    scripts/studies/question-forms.py [EVAL_DIR]   (default ../shared/eval)
"""
import json
import pathlib
import re
import sys

EVAL = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/eval")
SETS = {
    "hotpotqa_rpt_dev300 (first 30)": ("A_benchmarks/hotpotqa_rpt_dev300/queries.jsonl", 30),
    "musique_hipporag100 (first 30)": ("A_benchmarks/musique_hipporag100/queries.jsonl", 30),
    "sec-10-q (all)": ("C_private_library/qna/sec-10-q/queries.jsonl", None),
}
RELATIVE = re.compile(r"\b(?:the|a|an|this|that)\s+(?:[\w'-]+\s+){0,3}?(?:who|which|that|whose|where)\s+(?!is\b|was\b|are\b)", re.I)
CHOICE = re.compile(
    r"\b(?:both|either|which\s+(?:one\s+)?(?:of|is|was|has|had|came)|who\s+(?:is|was)\s+(?:older|younger|born\s+first))\b.*\bor\b"
    r"|\b(?:are|were|is|was)\s+\w.*\band\b.*\bboth\b",
    re.I,
)

print("| set | questions | matched |")
print("|---|---:|---:|")
for name, (path, first) in SETS.items():
    questions = [json.loads(line)["text"] for line in open(EVAL / path, encoding="utf-8")][:first]
    matched = sum(1 for q in questions if RELATIVE.search(q) or CHOICE.search(q))
    print(f"| {name} | {len(questions)} | {matched} |")
