"""Summaries of `ncu --csv` output (scripts/gpu_profile.sh):
  ncu_summary.py FILE            one block per kernel: duration, SM clock, cycles, tensor (SM) and
                                 L2 / DRAM throughput, issue rate, registers, shared memory
  ncu_summary.py FILE --source   the SASS source page: stall samples by reason over the kernel,
                                 and the instructions with the most samples (--top N, default 20)
Lines that are not CSV rows (the profiled program's own output) are skipped."""
import argparse
import collections
import csv
import io

DETAILS = ["Duration", "SM Frequency", "Elapsed Cycles", "Compute (SM) Throughput",
           "L2 Cache Throughput", "DRAM Throughput", "Issue Slots Busy",
           "Warp Cycles Per Issued Instruction", "Registers Per Thread",
           "Dynamic Shared Memory Per Block", "Cluster Size", "Grid Size", "Block Size"]


def csv_rows(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [line for line in f if line.startswith('"')]
    return list(csv.reader(io.StringIO("".join(lines))))


def details(path):
    rows = csv_rows(path)
    header, kernels = rows[0], collections.OrderedDict()
    for row in rows[1:]:
        r = dict(zip(header, row))
        key = (r["ID"], r["Kernel Name"])
        kernels.setdefault(key, {})[r["Metric Name"]] = (r["Metric Value"], r["Metric Unit"])
    for (kid, name), metrics in kernels.items():
        print(f"{kid} {name[:150]}")
        for metric in DETAILS:
            if metric in metrics:
                value, unit = metrics[metric]
                print(f"    {metric:36s} {value} {unit}")


def count(row, column):
    """A sample count of the source page (empty or '-' where an instruction has none)."""
    value = row.get(column) or "0"
    return int(value) if value.isdigit() else 0


def source(path, top):
    rows = csv_rows(path)
    header = next(r for r in rows if r and r[0] == "Address")
    data = [dict(zip(header, r)) for r in rows if r and r[0] not in ("Address", "Kernel Name")]
    stalls = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    total = sum(count(d, "Warp Stall Sampling (All Samples)") for d in data) or 1
    by_reason = collections.Counter()
    for d in data:
        for s in stalls:
            by_reason[s] += count(d, s)
    print(f"{total} stall samples")
    for reason, n in by_reason.most_common(10):
        print(f"  {reason:28s} {n:8d} {100 * n / total:5.1f}%")
    data.sort(key=lambda d: -count(d, "Warp Stall Sampling (All Samples)"))
    for d in data[:top]:
        n = count(d, "Warp Stall Sampling (All Samples)")
        print(f"{n:8d} {100 * n / total:5.1f}%  {d['Source'].strip()[:70]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--source", action="store_true")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    if args.source:
        source(args.file, args.top)
    else:
        details(args.file)


if __name__ == "__main__":
    main()
