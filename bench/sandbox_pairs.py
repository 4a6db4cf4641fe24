"""The sandbox alone, this checkout against another, as alternated pairs: what a sample costs, per build.

    python bench/sandbox_pairs.py OTHER_CHECKOUT [--pairs 10] [--samples 492] [--isolation auto]
                                  [--other-isolation MODE]

(``--isolation landlock --other-isolation auto`` with OTHER_CHECKOUT ``.``: the Landlock mode against namespaces,
on this checkout.)

Each side is a fresh process with the checkout first on PYTHONPATH: one warm sandbox (its supervisor and
everything it forks), every HumanEval problem registered once, then `--samples` canonical samples (the 164
problems in turn, judged by their tests) one after another, no pytest. It prints the wall time and the whole
process tree's CPU per sample (bench/phases.py reads it), and the median of the per-pair ratios (other / this):
above 1, this checkout is cheaper. A shared VM's figures drift by 10-15% from one run to the next: quote the
median ratio of ten pairs or more, never one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from common import commit, run_checkout, write_record

HERE = Path(__file__).resolve().parents[1]
ONE_SIDE = r"""
import json, sys, time
sys.path.insert(0, {bench!r})
from phases import tree_cpu
from pytest_humaneval import sandbox
try:
    from pytest_humaneval.data.dataset import load_problems
except ImportError:  # a checkout from before the package had subfolders (the other side of a pair)
    from pytest_humaneval.dataset import load_problems
problems = load_problems()[1]
programs = [sandbox.Program(p.prompt, p.canonical_solution, p.test, p.entry_point) for p in problems]
box = sandbox.Sandbox({isolation!r}).start()
for program in programs:
    box.run(program)
count = {samples}
cpu, wall = tree_cpu(box._proc.pid), time.perf_counter()
for i in range(count):
    assert box.run(programs[i % len(programs)]).status is sandbox.Status.PASSED
wall, cpu = time.perf_counter() - wall, tree_cpu(box._proc.pid) - cpu
print(json.dumps({{"wall_ms": wall / count * 1000, "cpu_ms": cpu / count * 1000, "where": sandbox.__file__,
                  "isolation": box.isolation}}))
box.close()
"""


def side(checkout: Path, samples: int, isolation: str = "auto") -> dict:
    return run_checkout(checkout, ONE_SIDE.format(bench=str(HERE / "bench"), samples=samples, isolation=isolation))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("other", type=Path)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--samples", type=int, default=492)
    parser.add_argument("--isolation", default="auto", help="this side's (auto, landlock, basic, ...)")
    parser.add_argument("--other-isolation", default=None, help="the other side's (default: --isolation)")
    args = parser.parse_args()
    rows = []
    for pair in range(args.pairs):
        other = side(args.other.resolve(), args.samples, args.other_isolation or args.isolation)
        this = side(HERE, args.samples, args.isolation)
        rows.append((other, this))
        print(f"pair {pair + 1}: other ({other.get('isolation', '?')}) {other['wall_ms']:.2f} ms wall "
              f"{other['cpu_ms']:.2f} ms CPU;  this ({this['isolation']}) {this['wall_ms']:.2f} ms wall "
              f"{this['cpu_ms']:.2f} ms CPU")
    figures = {}
    for key, name in (("wall_ms", "wall"), ("cpu_ms", "CPU")):
        ratio = statistics.median(o[key] / t[key] for o, t in rows)
        figures[key] = {"other_median": statistics.median(o[key] for o, _ in rows),
                        "this_median": statistics.median(t[key] for _, t in rows), "median_ratio": ratio}
        print(f"{name} per sample: other median {figures[key]['other_median']:.2f} ms, this "
              f"{figures[key]['this_median']:.2f} ms; median per-pair ratio (other / this) {ratio:.3f}")
    write_record("sandbox-pairs", {"other": {"checkout": str(args.other.resolve()), **commit(args.other.resolve())},
                                   "samples": args.samples, "isolation": args.isolation,
                                   "other_isolation": args.other_isolation or args.isolation, **figures},
                 [{"other": o, "this": t} for o, t in rows])
    return 0


if __name__ == "__main__":
    sys.exit(main())
