#!/usr/bin/env python3
"""The router's confusion table: for each kind of question, which agent the router chose.

Reads the traces of `quarry eval answers --route-only --trace T.jsonl` runs and the sets' own question
kinds (`question_type` in sec-10-q's queries.jsonl, `type` in HotpotQA's, the hops MuSiQue's ids name;
a set without any counts as one kind, named after the set), and prints one Markdown row per set and kind: questions, then how many
the router sent to each agent.

    scripts/studies/router-confusion.py SET_DIR=TRACE.jsonl [SET_DIR=TRACE.jsonl ...]
"""
import collections
import json
import pathlib
import re
import sys

AGENTS = ["naive", "deep", "chain"]
rows = []
for argument in sys.argv[1:]:
    set_dir, trace = argument.split("=", 1)
    set_dir = pathlib.Path(set_dir)
    kinds = {}
    for line in (set_dir / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            hops = re.match(r"(\d)hop", q["_id"])  # MuSiQue's ids name their hops
            kinds[q["_id"]] = q.get("question_type") or q.get("type") or (hops and f"{hops[1]}-hop") or set_dir.name
    table = collections.defaultdict(collections.Counter)
    for line in pathlib.Path(trace).read_text(encoding="utf-8").splitlines():
        if line.strip():
            t = json.loads(line)
            table[kinds.get(t["qid"], "?")][t["routed"]] += 1
    for kind in sorted(table):
        counts = table[kind]
        rows.append((set_dir.name, kind, sum(counts.values()), [counts[a] for a in AGENTS]))
print("| set | kind of question | questions | " + " | ".join(f"→ {a}" for a in AGENTS) + " |")
print("|---|---|---:|" + "---:|" * len(AGENTS))
for set_name, kind, n, counts in rows:
    print(f"| {set_name} | {kind} | {n} | " + " | ".join(str(c) for c in counts) + " |")
