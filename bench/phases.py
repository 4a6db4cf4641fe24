"""What one sample costs the sandbox, phase by phase, without pytest: wall time and CPU per sample.

    python bench/phases.py [--rounds 3] [--isolation auto]
    PYTHONPATH=/path/to/another/checkout python bench/phases.py     # the same, for another build, side by side

One warm sandbox (its supervisor and everything it forks), samples sent one after another, no pytest. The CPU
is the whole process tree's (the supervisor, the judge, the fork server and the candidates it reaped), read from
/proc, so it counts every process a sample costs. The 164 HumanEval problems, each run three ways; the phases
are the differences:

- ``spawn``: a program that only defines its entry point, a test that never calls it (the judge asks once
  whether it loaded): forking and containing the candidate, the judge's request, the supervisor's clean-up;
- ``load``: the canonical solutions, a test that never calls them: the candidate compiles and executes its
  program (``load`` = this minus ``spawn``);
- ``calls``: the canonical solutions against their tests (``calls`` = this minus ``load``): the judge's test
  and every round trip to the candidate.

The pytest side is `breakdown.py`'s (pytest alone, and the plugin end to end). Run it on a quiet machine, each
build alternated with the other a few times: single figures drift by 10-15% on a shared VM.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from pytest_humaneval import sandbox

try:
    from pytest_humaneval.data.dataset import load_problems
except ImportError:  # a checkout from before the package had subfolders (the other side of a pair)
    from pytest_humaneval.dataset import load_problems

TICK = os.sysconf("SC_CLK_TCK")
NO_CALLS = "def check(candidate):\n    pass\n"


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and every live descendant, with what each has reaped of its own children."""
    total, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        try:
            fields = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()
            total += sum(int(value) for value in fields[11:15]) / TICK  # utime stime cutime cstime
            for task in os.listdir(f"/proc/{pid}/task"):
                stack += [int(child) for child in open(f"/proc/{pid}/task/{task}/children").read().split()]
        except (OSError, ValueError):
            continue
    return total


def phases(problems) -> dict[str, list[sandbox.Program]]:
    return {
        "spawn": [sandbox.Program("", f"def {p.entry_point}(*args):\n    pass\n", NO_CALLS, p.entry_point)
                  for p in problems],
        "load": [sandbox.Program(p.prompt, p.canonical_solution, NO_CALLS, p.entry_point) for p in problems],
        "calls": [sandbox.Program(p.prompt, p.canonical_solution, p.test, p.entry_point) for p in problems],
    }


def measure(box: sandbox.Sandbox, programs: list[sandbox.Program]) -> tuple[float, float]:
    """(wall ms, CPU ms) per sample."""
    root = box._proc.pid
    cpu, wall = tree_cpu(root), time.perf_counter()
    for program in programs:
        result = box.run(program)
        if result.status is not sandbox.Status.PASSED:
            sys.exit(f"{program.entry_point}: {result.status.value}: {result.detail}")
    wall, cpu = time.perf_counter() - wall, tree_cpu(root) - cpu
    return wall / len(programs) * 1000, cpu / len(programs) * 1000


def _minus(after: tuple[float, ...], before: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(a - b for a, b in zip(after, before, strict=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--isolation", default="auto")
    args = parser.parse_args()
    box = sandbox.Sandbox(args.isolation).start()
    print(f"{sandbox.__file__}  isolation {box.isolation}")
    runs = phases(load_problems()[1])
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for programs in runs.values():  # a round first, not counted: every problem registered once
        measure(box, programs)
    for _ in range(args.rounds):
        for name, programs in runs.items():
            found[name].append(measure(box, programs))
    box.close()
    median = {name: tuple(statistics.median(v[i] for v in values) for i in (0, 1)) for name, values in found.items()}
    rows = [("spawn (fork, contain, judge's request, clean-up)", median["spawn"]),
            ("load (compile + exec the program)", _minus(median["load"], median["spawn"])),
            ("calls (the test, round trips)", _minus(median["calls"], median["load"])),
            ("a whole sample", median["calls"])]
    for label, (wall, cpu) in rows:
        print(f"  {label:52} {wall:6.2f} ms wall  {cpu:6.2f} ms CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
