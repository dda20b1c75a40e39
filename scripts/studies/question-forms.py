#!/usr/bin/env python3
"""Whether a question's form shows that it needs several hops: how many questions of each set a test of
three forms matches — a noun phrase with a relative clause ("the band
who released …", "the company that …"), a choice between two things ("… A or B?", "are A and B both …"),
or a comparison of two capitalised names ("Who directed more films, A or B?", "Was A or B born first?",
"Both A and B …").

The router (`quarry_agents::router::multi_hop_form`) uses the first two forms and sends what they match
to DeepSearch. Run on 2026-12-06 over every question of HotpotQA (300), MuSiQue (100), RGB's English
part (50 single-fact news questions) and sec-10-q (98), they match 82, 59, 0 and 0; with the named
comparisons, 116, 59, 0 and 0. DeepSearch answered 15 of those comparisons no better than NaiveRAG
(F1 0.137 against 0.130, at four times the time), so the router does not use the third form
(docs/evaluation/results.md).

    scripts/studies/question-forms.py [EVAL_DIR]   (default ../shared/eval)
"""
import json
import pathlib
import re
import sys

EVAL = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/eval")
SETS = {
    "hotpotqa_rpt_dev300": "A_benchmarks/hotpotqa_rpt_dev300/queries.jsonl",
    "musique_hipporag100": "A_benchmarks/musique_hipporag100/queries.jsonl",
    "rgb_part1/en": "A_benchmarks/rgb_part1/en/queries.jsonl",
    "sec-10-q": "C_private_library/qna/sec-10-q/queries.jsonl",
}
RELATIVE = re.compile(r"\b(?:the|a|an|this|that)\s+(?:[\w'-]+\s+){0,3}?(?:who|which|that|whose|where)\s+(?!is\b|was\b|are\b)", re.I)
CHOICE = re.compile(
    r"\b(?:both|either|which\s+(?:one\s+)?(?:of|is|was|has|had|came)|who\s+(?:is|was)\s+(?:older|younger|born\s+first))\b.*\bor\b"
    r"|\b(?:are|were|is|was)\s+\w.*\band\b.*\bboth\b",
    re.I,
)

# Case-sensitive: the names are capitalised.
NAMED = re.compile(
    r"[,:]\s*(?:[Tt]he\s+)?[A-Z\"'\d][^,?]*?\s+or\s+(?:the\s+)?[A-Z\"'\d][^,?]*\?\s*$"
    r"|^\s*(?:[Ww]as|[Ii]s|[Ww]ere|[Aa]re|[Dd]id|[Dd]oes|[Dd]o)\s+(?:the\s+)?[A-Z\"'][^?]*?\s+or\s+(?:the\s+)?[A-Z\"']"
    r"|\b[Bb]oth\s+(?:the\s+)?[A-Z][^?]*?\s+and\s+(?:the\s+)?[A-Z]"
    r"|[A-Z][^\s?]*\s+and\s+(?:the\s+)?[A-Z][^?]*?\bboth\b"
)

print("| set | questions | relative clause or choice | with named comparisons |")
print("|---|---:|---:|---:|")
for name, path in SETS.items():
    questions = [json.loads(line)["text"] for line in open(EVAL / path, encoding="utf-8") if line.strip()]
    first = [q for q in questions if RELATIVE.search(q) or CHOICE.search(q)]
    matched = [q for q in questions if RELATIVE.search(q) or CHOICE.search(q) or NAMED.search(q)]
    print(f"| {name} | {len(questions)} | {len(first)} | {len(matched)} |")
