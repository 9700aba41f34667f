#!/usr/bin/env python3
"""The headline table at the top of docs/benchmarks.md, from the JSON that `tunejit run --json` writes.

    scripts/benchmarks_table.py [--date YYYY-MM-DD] FILE.json...          # print the rows
    scripts/benchmarks_table.py --update docs/benchmarks.md [--date D] FILE.json...

Each JSON (schema: cli/run_report.cc, ReportJson) gives up to four rows, keyed by their first two
cells (figure, log):
  - MODEL bBATCH MODE: end to end   ours against the in-process cuDNN network, accuracy verdict;
  - MODEL bBATCH MODE: per layer    the layers' sums and the range of cuDNN/ours over the layers
                                    cuDNN has too;
  - MODEL bBATCH MODE: startup, cold cache | warm cache   the startup split's total (cold when the
                                    build compiled any kernel, warm when all were cache hits).
MODE is fp32, fp16, int8 (dp4a) or int8 (tensor cores), from the JSON's `numeric_mode`; in older
JSONs, which lack it, an int8 run whose layers ran a `_wgmma` kernel is the tensor-core one. The GPU is the JSON's
device name, the commit the one in its `tunejit_version` ("0.1.0 (abc1234)"), and the date
`--date` or else the JSON file's modification date (UTC): the JSON carries no date.

--update rewrites the block between the BEGIN/END markers in the given markdown file: a row the
JSONs give replaces the row with the same figure and log; rows they do not give (the tuning-time
rows, written by hand from `tunejit tune`'s summary) are kept as they are.
"""

import argparse
import datetime
import json
import os
import re
import sys

BEGIN = "<!-- BEGIN headline table (scripts/benchmarks_table.py) -->"
END = "<!-- END headline table -->"
COLUMNS = ["figure", "log", "tunejit", "baseline", "baseline/tunejit", "check", "GPU", "commit",
           "date"]
MODEL_NAMES = {"vgg16": "VGG-16"}


def _ms(seconds):
    return "%.3f ms" % (seconds * 1e3)


def _ratio(value):
    return "%.2fx" % value


def _model(report):
    model = report.get("model", "?")
    if model in MODEL_NAMES:
        return MODEL_NAMES[model]
    return os.path.basename(model)


def _mode(report):
    precision = report.get("precision", "?")
    numeric_mode = report.get("numeric_mode")
    if numeric_mode == "int8-tensor-cores":
        return "int8 (tensor cores)"
    if numeric_mode == "int8":
        return "int8 (dp4a)"
    if precision != "int8":
        return precision
    on_tensor_cores = any("_wgmma" in layer.get("kernel", "") for layer in report.get("layers", []))
    return "int8 (tensor cores)" if on_tensor_cores else "int8 (dp4a)"


def _commit(report):
    match = re.search(r"\(([0-9a-fA-F]{6,40})[^)]*\)", report.get("tunejit_version", ""))
    return "`%s`" % match.group(1) if match else "-"


def _log(report):
    log = report.get("log") or ""
    return "`%s`" % os.path.basename(log) if log else "-"


def _accuracy(report):
    acc = report.get("accuracy", {})
    if not acc.get("checked"):
        return "not checked (%s)" % acc.get("skipped", "?")
    rel = acc.get("rel_l2")
    rel_text = rel if isinstance(rel, str) else "%.3g" % rel
    return "rel L2 %s vs %s, top-1 %.0f%%: %s" % (rel_text, acc.get("reference", "cuDNN fp32"),
                                                 100 * acc.get("top1_agreement", 0),
                                                 "PASS" if acc.get("pass") else "FAIL")


def rows_for(report, date):
    """The table rows (lists of cells, in COLUMNS order) one `tunejit run --json` report gives."""
    prefix = "%s b%s %s" % (_model(report), report.get("batch", "?"), _mode(report))
    gpu = report.get("device", {}).get("name", "?")
    common = [gpu, _commit(report), date]
    log = _log(report)
    rows = []

    e2e = report.get("end_to_end", {})
    ours = e2e.get("ours_seconds") or 0
    base = e2e.get("cudnn_seconds")
    base_name = "cuDNN %s" % e2e.get("baseline_precision", "fp32")
    if ours > 0:
        rows.append([prefix + ": end to end", log, _ms(ours),
                     "%s %s" % (base_name, _ms(base)) if base else "-",
                     _ratio(base / ours) if base else "-", _accuracy(report)] + common)

    ratios = [layer["cudnn_over_ours"] for layer in report.get("layers", [])
              if layer.get("cudnn_over_ours") is not None]
    totals = report.get("totals", {})
    if ratios:
        ours_sum = totals.get("ours_seconds_matched", 0)
        base_sum = totals.get("cudnn_seconds_matched", 0)
        rows.append([prefix + ": per layer", log, "layers' sum " + _ms(ours_sum),
                     "%s layers' sum %s" % (base_name, _ms(base_sum)),
                     "%s-%s per layer" % (_ratio(min(ratios)), _ratio(max(ratios))),
                     "%d layers with a cuDNN counterpart; sums %s" %
                     (len(ratios), _ratio(base_sum / ours_sum) if ours_sum > 0 else "-")] + common)

    startup = report.get("startup", [])
    if startup:
        build = report.get("build", {})
        compiled = build.get("kernels_compiled", 0)
        hits = build.get("kernel_cache_hits", 0)
        phases = ", ".join("%s %.2f s" % (p.get("phase", "?"), p.get("seconds", 0)) for p in startup)
        rows.append(["%s: startup, %s cache" % (prefix, "cold" if compiled > 0 else "warm"), log,
                     "%.2f s" % sum(p.get("seconds", 0) for p in startup), "-", "-",
                     "%s; compile %.2f s (%d compiled, %d cache hits)" %
                     (phases, build.get("compile_seconds", 0), compiled, hits)] + common)
    return rows


def format_table(rows):
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    for row in rows:
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return "\n".join(lines) + "\n"


def parse_table(text):
    """The rows (lists of cells) of the markdown table in `text`, header and rule left out."""
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("|") or re.match(r"^\|(\s*:?-+:?\s*\|)+$", line):
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line[1:-1])]
        if cells and cells[0] == COLUMNS[0]:
            continue
        rows.append(cells)
    return rows


def merge_rows(old_rows, new_rows):
    """old_rows with each row new_rows has (same figure and log) replaced, new ones appended."""
    new_by_key = {}  # a later JSON's row wins over an earlier one's (e.g. a warm run's times)
    for row in new_rows:
        new_by_key[(row[0], row[1])] = row
    merged, used = [], set()
    for row in old_rows:
        key = (row[0], row[1] if len(row) > 1 else "")
        if key in new_by_key:
            merged.append(new_by_key[key])
            used.add(key)
        else:
            merged.append(row)
    for key, row in new_by_key.items():
        if key not in used:
            merged.append(row)
    return merged


def update_markdown(text, new_rows):
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError("no '%s' ... '%s' block" % (BEGIN, END))
    block = text[start + len(BEGIN):end]
    merged = merge_rows(parse_table(block), new_rows)
    return text[:start] + BEGIN + "\n" + format_table(merged) + text[end:]


def file_date(path):
    mtime = os.path.getmtime(path)
    return datetime.datetime.fromtimestamp(mtime, datetime.timezone.utc).strftime("%Y-%m-%d")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--update", metavar="MARKDOWN",
                        help="rewrite the headline block of this file (docs/benchmarks.md)")
    parser.add_argument("--date", help="date of the runs (default: each JSON's modification date)")
    parser.add_argument("json", nargs="+", help="JSON files written by `tunejit run --json`")
    args = parser.parse_args(argv)
    rows = []
    for path in args.json:
        with open(path) as f:
            report = json.load(f)
        rows.extend(rows_for(report, args.date or file_date(path)))
    if not args.update:
        sys.stdout.write(format_table(rows))
        return 0
    with open(args.update) as f:
        text = f.read()
    try:
        text = update_markdown(text, rows)
    except ValueError as e:
        sys.stderr.write("benchmarks_table.py: %s: %s\n" % (args.update, e))
        return 1
    with open(args.update, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
