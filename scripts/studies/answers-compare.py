#!/usr/bin/env python3
"""Scores and compares `quarry eval answers --trace` runs, per question.

    answers-compare.py summary TRACE...       key facts, reference figures stated, cited, supported
                                              claims and declines of each trace (and of them together)
    answers-compare.py diff BEFORE AFTER      the questions whose stated figures or answer changed
    answers-compare.py missed TRACE           each answerable question's reference figures not stated,
                                              and whether the passages it read hold them ([read])

Key facts here is what `quarry eval answers` reports: the mean, over answerable questions whose reference
has figures, of the share of those figures the answer states (the trace's `stated`). Used for the
before/after tables of docs/evaluation/results.md and decisions.md.
"""
import json
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def summary(rows):
    shares, stated, figures, cited, answered, supported, claims = [], 0, 0, 0, 0, 0, 0
    declined_unans, unans = 0, 0
    for r in rows:
        if not r.get("answerable", True):
            unans += 1
            declined_unans += bool(r.get("declined"))
            continue
        ref = r.get("reference_figures") or []
        if ref:
            shares.append(len(r.get("stated") or []) / len(ref))
            stated += len(r.get("stated") or [])
            figures += len(ref)
        if not r.get("declined"):
            answered += 1
            cited += bool(r.get("sources")) and any(c.get("cited") for c in r.get("claims") or []) or "[" in (r.get("answer") or "")
        for c in r.get("claims") or []:
            claims += 1
            supported += bool(c.get("supported"))
    out = {"questions": len(rows)}
    if shares:
        out["key_facts"] = round(sum(shares) / len(shares), 3)
        out["figures"] = f"{stated} of {figures}"
    if answered:
        out["cited"] = round(cited / answered, 3)
    if claims:
        out["supported"] = round(supported / claims, 3)
    if unans:
        out["declined"] = f"{declined_unans} of {unans} ({declined_unans / unans:.3f})"
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    what, paths = sys.argv[1], sys.argv[2:]
    if what == "summary":
        everything = []
        for p in paths:
            rows = load(p)
            everything += rows
            print(p, summary(rows))
        if len(paths) > 1:
            print("together", summary(everything))
    elif what == "diff":
        before = {r["qid"]: r for r in load(paths[0])}
        for r in load(paths[1]):
            b = before.get(r["qid"])
            if b is None:
                print(r["qid"], "not in", paths[0])
                continue
            bs, as_ = len(b.get("stated") or []), len(r.get("stated") or [])
            mark = "" if bs == as_ else f" stated {bs} -> {as_} of {len(r.get('reference_figures') or [])}"
            if b.get("answer") != r.get("answer") or mark:
                print(f"{r['qid']}: CHANGED{mark}")
                lost = set(b.get("stated") or []) - set(r.get("stated") or [])
                gained = set(r.get("stated") or []) - set(b.get("stated") or [])
                if lost:
                    print("   lost", sorted(lost))
                if gained:
                    print("   gained", sorted(gained))
    elif what == "missed":
        for r in load(paths[0]):
            if not r.get("answerable", True):
                continue
            missing = [f for f in r.get("reference_figures") or [] if f not in (r.get("stated") or [])]
            if not missing:
                continue
            read = " ".join(r.get("read_text") or [])
            marks = [f + (" [read]" if f.replace("$", "").strip() in read else "") for f in missing]
            print(f"{r['qid']} ({len(r.get('stated') or [])} of {len(r.get('reference_figures') or [])}): {r['question']}")
            print("   missed:", "; ".join(marks))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
