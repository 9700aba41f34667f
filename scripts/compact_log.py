#!/usr/bin/env python3
"""Keeps the fastest records of each workload of an AutoTVM log (a maintenance tool for the logs
shipped in data/, which must stay small enough to travel with the repo).

  python3 scripts/compact_log.py --keep 300 LOG [LOG...] > OUT

A record is kept if it measured without error (error_no 0) and is among the --keep fastest of its
(task, workload, target) in the inputs, taken in order; exact duplicate lines are dropped. The
order of the kept lines is the inputs' order, so `tunejit run` picks the same record as from the
whole log (the fastest; the first of equal times). Lines that are not records fail loudly.
"""
import argparse
import json
import sys


def key_of(record):
  inp = record["input"]
  return json.dumps([inp[0], inp[1], inp[2]], sort_keys=True)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--keep", type=int, default=300)
  parser.add_argument("logs", nargs="+")
  args = parser.parse_args()
  lines = []
  for path in args.logs:
    with open(path) as f:
      for number, line in enumerate(f, 1):
        line = line.rstrip("\n")
        if not line.strip():
          continue
        try:
          record = json.loads(line)
          cost = record["result"][0]
          error = record["result"][1]
        except (ValueError, KeyError, IndexError, TypeError) as e:
          sys.exit(f"{path}:{number}: not an AutoTVM record: {e}")
        if error == 0:
          lines.append((key_of(record), min(cost), line))
  seen, by_key = set(), {}
  for position, (key, cost, line) in enumerate(lines):
    if line in seen:
      continue
    seen.add(line)
    by_key.setdefault(key, []).append((cost, position))
  kept = set()
  for entries in by_key.values():
    entries.sort()
    kept.update(position for _, position in entries[: args.keep])
  for position, (_, _, line) in enumerate(lines):
    if position in kept:
      print(line)
  print(f"kept {len(kept)} of {len(lines)} measured records, {len(by_key)} workloads",
        file=sys.stderr)


if __name__ == "__main__":
  main()
