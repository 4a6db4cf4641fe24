"""What one sample costs in the sandbox alone: wall time and CPU time per sample, no pytest.

    python bench/sandbox_cpu.py [--rounds 5] [--isolation auto]

Runs the 164 canonical solutions `--rounds` times, one after the other, through one warm `Sandbox` in this
process, and prints per sample: the wall time, this process's CPU (building the request, reading and checking
the reply) and the sandbox's CPU (supervisor, judge and candidates: the children's CPU, counted once the
supervisor is closed and reaped). The sandbox's CPU per sample divided by the cores bounds any harness's rate.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

from pytest_humaneval import sandbox
from pytest_humaneval.data.dataset import load_problems


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--isolation", default="auto", choices=sandbox.ISOLATION_MODES)
    args = parser.parse_args()
    programs = [sandbox.Program(p.prompt, p.canonical_solution, p.test, p.entry_point)
                for p in load_problems()[1]] * args.rounds
    box = sandbox.Sandbox(args.isolation).start()
    children, wall, own = children_cpu(), time.perf_counter(), time.process_time()
    for program in programs:
        result = box.run(program)
        if result.status is not sandbox.Status.PASSED:
            sys.exit(f"a canonical solution did not pass: {result.status.value}: {result.detail}")
    wall, own = time.perf_counter() - wall, time.process_time() - own
    isolation = box.isolation
    box.close()
    count, ms = len(programs), lambda seconds: f"{seconds / len(programs) * 1000:.2f} ms"
    print(f"{count} samples, one sandbox, isolation {isolation}: {ms(wall)} wall per sample, this process's CPU "
          f"{ms(own)}, the sandbox's CPU {ms(children_cpu() - children)} per sample")
    return 0


if __name__ == "__main__":
    sys.exit(main())
