#!/usr/bin/env python3
"""Checks a tuning log after `kill -9` and `tunejit tune --resume` (scripts/gpu_tune.sh KILL_AT).

usage: check_resume.py BEFORE AFTER
BEFORE is a copy of the log taken right after the kill (it may end in a torn line); AFTER is the
log once the resumed run finished. Passes when every whole record line of BEFORE is still at the
start of AFTER, in order (nothing lost), and no (workload, config index) appears twice in AFTER
(nothing measured again). Prints the counts; exit 1 on a violation.
"""
import json
import sys


def whole_lines(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    return [l for l in lines[:-1] if l.strip()], lines[-1]  # the tail lacks its newline: torn


def main():
    before, torn = whole_lines(sys.argv[1])
    after, after_tail = whole_lines(sys.argv[2])
    ok = True
    if after[: len(before)] != before:
        print("LOST: the records written before the kill are not the start of the resumed log")
        ok = False
    if after_tail:
        print("TORN: the resumed log ends in a partial line")
        ok = False
    seen = {}
    for n, line in enumerate(after, 1):
        rec = json.loads(line)
        key = (json.dumps(rec["input"]), rec["config"]["index"])
        if key in seen:
            print(f"DUPLICATE: line {n} repeats line {seen[key]} ({rec['input'][1]}, index {key[1]})")
            ok = False
        seen[key] = n
    print(f"before kill: {len(before)} whole records{' + a torn line' if torn else ''}; "
          f"after resume: {len(after)} records, {len(seen)} distinct; "
          f"{'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
