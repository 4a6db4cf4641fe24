"""Per-sample cost of namespace isolation over the basic sandbox, on the same samples, as a ratio.

    python bench/isolation_overhead.py [--rounds 5]

Each round runs the 164 canonical programs once through a `basic` sandbox and once through a `strict`
(namespaces) sandbox, one supervisor each, in this process, one sample at a time; the order of the two
alternates by round. It prints the per-sample mean of each, the difference in ms and the ratio, as medians
over rounds. Needs root (or the namespace path is not available and the script says so).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from pytest_humaneval import sandbox
from pytest_humaneval.data.dataset import load_problems


def per_sample_ms(box: sandbox.Sandbox, programs: list[str]) -> float:
    started = time.perf_counter()
    for program in programs:
        result = box.run(program, sandbox.Limits())
        if result.status is not sandbox.Status.PASSED:
            sys.exit(f"a canonical solution did not pass under {box.isolation}: {result.detail}")
    return (time.perf_counter() - started) * 1000 / len(programs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    programs = [sandbox.Program(p.prompt, p.canonical_solution, p.test, p.entry_point)
                for p in load_problems()[1]]
    try:
        strict = sandbox.Sandbox("strict").start()
    except sandbox.SandboxError as exc:
        sys.exit(f"namespace isolation is not available here: {exc}")
    basic = sandbox.Sandbox("basic").start()
    rows = []
    try:
        for round_ in range(args.rounds):
            order = (basic, strict) if round_ % 2 == 0 else (strict, basic)
            times = {box.isolation: per_sample_ms(box, programs) for box in order}
            rows.append((times["basic"], times["namespaces"]))
            print(f"round {round_ + 1}: basic {times['basic']:.2f} ms/sample, "
                  f"namespaces {times['namespaces']:.2f} ms/sample")
    finally:
        basic.close()
        strict.close()
    extra = statistics.median(ns - b for b, ns in rows)
    ratio = statistics.median(ns / b for b, ns in rows)
    print(f"\n{len(programs)} samples x {args.rounds} rounds: namespaces cost {extra:+.2f} ms per sample "
          f"over basic (median), ratio {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
