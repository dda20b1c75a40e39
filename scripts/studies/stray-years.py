"""Years (1900-2099) an answer names that neither its question nor any passage it read or cited names.

usage: python3 scripts/studies/stray-years.py TRACE.jsonl [TRACE.jsonl ...]

Reads `quarry eval answers --trace` lines (fields `qid`, `question`, `answer`, `read_text`, `sources`)
and prints, per trace, how many years its answers name and which of them no source names: a year the
model changed while copying (docs/evaluation/decisions.md, 2026-12-07 (e)).
"""
import json
import re
import sys

YEAR = re.compile(r'(?<![\d,.$])(?:19|20)\d\d(?![\d,])')

for path in sys.argv[1:]:
    named = 0
    stray = []
    with open(path) as trace:
        for line in trace:
            d = json.loads(line)
            sources = ' '.join(d.get('read_text') or []) + ' ' + json.dumps(d.get('sources') or '') + ' ' + d['question']
            known = set(YEAR.findall(sources))
            for year in YEAR.findall(d.get('answer') or ''):
                named += 1
                if year not in known:
                    stray.append((d['qid'], year))
    print(path, 'years', named, 'named by no source', len(stray), stray[:10])
