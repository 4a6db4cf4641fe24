"""What a supervisor costs to start and to close, and the memory it holds, this checkout against another, as
alternated pairs.

    python bench/supervisor_start.py OTHER_CHECKOUT [--pairs 6] [--isolation auto]

Each side is a fresh process with the checkout first on PYTHONPATH: a first sandbox started (the harness
process's page holder starts with it) and closed, then a second one (the holder lives on: a supervisor alone),
each timed from ``Sandbox(...).start()`` until it is ready for a sample, and from ``close()`` until it returns;
with the second one up, the memory its cgroup counts (supervisor, judge, fork server and what the kernel
allocated for them: the root's tmpfs, its mounts), where there is one. A run of HumanEval on a machine of N
CPUs starts N supervisors at once, each paying the supervisor's part. A shared VM's figures drift: quote the
medians of six pairs or more.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from common import commit, run_checkout, write_record

HERE = Path(__file__).resolve().parents[1]
ONE_SIDE = r"""
import json, os, time
from pytest_humaneval import sandbox

def timed(isolation):
    started = time.perf_counter()
    box = sandbox.Sandbox(isolation).start()
    return box, time.perf_counter() - started

def closed(box):
    started = time.perf_counter()
    box.close()
    return time.perf_counter() - started

first, first_s = timed({isolation!r})
first_close_s = closed(first)
box, start_s = timed({isolation!r})
memory = None
for folder in box._cgroups:
    for name in ("memory.current", "memory.usage_in_bytes"):
        if os.path.exists(os.path.join(folder, name)):
            with open(os.path.join(folder, name)) as handle:
                memory = int(handle.read()) / 2**20
isolation = box.isolation
close_s = closed(box)
print(json.dumps({{"first_start_s": first_s, "first_close_s": first_close_s, "start_s": start_s,
                  "close_s": close_s, "cgroup_mib": memory, "isolation": isolation}}))
"""
KEYS = ("first_start_s", "start_s", "close_s", "cgroup_mib")


def side(checkout: Path, isolation: str) -> dict:
    return run_checkout(checkout, ONE_SIDE.format(isolation=isolation))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("other", type=Path)
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--isolation", default="auto")
    args = parser.parse_args()
    rows = []
    for pair in range(args.pairs):
        other, this = side(args.other.resolve(), args.isolation), side(HERE, args.isolation)
        rows.append((other, this))
        print(f"pair {pair + 1}: " + ";  ".join(
            f"{name} ({row['isolation']}) " + " ".join(f"{key} {row[key]:.3f}" for key in KEYS if row[key] is not None)
            for name, row in (("other", other), ("this", this))))
    figures = {}
    for key in KEYS:
        if any(row[key] is None for pair in rows for row in pair):
            continue
        figures[key] = {"other_median": statistics.median(o[key] for o, _ in rows),
                        "this_median": statistics.median(t[key] for _, t in rows)}
        print(f"{key}: other median {figures[key]['other_median']:.3f}, this {figures[key]['this_median']:.3f}")
    write_record("supervisor-start", {"other": {"checkout": str(args.other.resolve()),
                                                **commit(args.other.resolve())},
                                      "isolation": args.isolation, **figures},
                 [{"other": o, "this": t} for o, t in rows])
    return 0


if __name__ == "__main__":
    sys.exit(main())
