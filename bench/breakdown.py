"""Where the plugin's time goes: its CPU-bound halves measured apart, on the same 1,640 canonical samples.

    python bench/breakdown.py [--repeat 10] [--workers 2]

Rows, each a whole measurement of 164 x `--repeat` samples (or items), as samples/s:

1. floor: every program compiled and executed in this process, no isolation, one core;
2. sandbox alone: `--workers` processes, each running its share through its own supervisor (a forked child
   per sample, the isolation the machine allows), no pytest; the processes and supervisors are started
   before the clock starts, so this is the steady state the issue's "warm fork per sample" row describes;
3. pytest alone: the same number of items that do nothing (a generated test file), whole process, in one
   pytest process and with `-n W`: what pytest (and pytest-xdist) cost per item and at start-up;
4. the plugin, whole process: `pytest --humaneval-config CFG` (one process, its pool of W sandboxes running
   the samples ahead of the items) and `pytest --humaneval-config CFG -n W` (xdist, one sandbox per worker).

On a machine with as many cores as workers the halves compete for the same CPUs: with xdist row 4 is close to
the sum of the times of rows 2 and 3; the pool overlaps pytest's work with the sandboxes', which leaves the
sum of their CPU times divided by the cores as its bound.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from pathlib import Path

from pytest_humaneval import sandbox
from pytest_humaneval.data.dataset import load_problems

OUT = Path(__file__).resolve().parent / "out"
sys.path.insert(0, str(Path(__file__).resolve().parent))

# The same inputs as the paired comparison, and the same way of timing a whole command.
from compare_reference import timed as timed_command  # noqa: E402
from compare_reference import write_inputs  # noqa: E402


def programs() -> list[sandbox.Program]:
    return [sandbox.Program(p.prompt, p.canonical_solution, p.test, p.entry_point)
            for p in load_problems()[1]]


def floor(codes: list[sandbox.Program]) -> None:
    sources = [sandbox.build_program(p.prompt, p.completion, p.test, p.entry_point) for p in codes]
    for source in sources:
        exec(compile(source, "<humaneval>", "exec"), {})  # noqa: S102 - trusted: the canonical solutions


_box: sandbox.Sandbox | None = None  # this pool process's warm supervisor


def start_sandbox() -> None:
    global _box
    _box = sandbox.Sandbox("auto").start()  # started before the clock starts


def sandbox_share(codes: list[sandbox.Program]) -> int:
    assert _box is not None, "start_sandbox runs first, in each pool process"
    return sum(_box.run(program).status is sandbox.Status.PASSED for program in codes)


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def show(label: str, count: int, elapsed: float) -> None:
    print(f"{label:58} {elapsed:6.2f} s  {count / elapsed:7.0f} samples/s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    base = programs()
    codes = base * args.repeat
    count, workers = len(codes), args.workers
    _, config, _ = write_inputs(args.repeat)
    items = OUT / f"test_empty_items_{count}.py"
    items.write_text(f"import pytest\n\n\n@pytest.mark.parametrize('i', range({count}))\ndef test_item(i):\n"
                     "    pass\n")
    probe = sandbox.Sandbox("auto").start()
    isolation = probe.isolation
    probe.close()

    show("1. floor: compile + exec in this process, 1 core", count, timed(lambda: floor(codes)))

    # Whole copies of the problem set per process (share i gets copies i, i + W, ...): a split by position
    # would give one process all the odd problems, the slow HumanEval/75 among them.
    shares = [[code for copy in range(i, args.repeat, workers) for code in base] for i in range(workers)]
    with multiprocessing.get_context("spawn").Pool(workers, initializer=start_sandbox) as pool:
        pool.map(sandbox_share, [[]] * workers, chunksize=1)  # every pool process up, its supervisor ready

        def sandbox_alone() -> None:
            passed = sum(pool.map(sandbox_share, shares, chunksize=1))
            if passed != count:
                sys.exit(f"only {passed} of {count} canonical samples passed in the sandbox")

        show(f"2. sandbox alone: {workers} warm processes, isolation {isolation}", count, timed(sandbox_alone))
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    xdist = ["-n", str(workers)]
    show(f"3. pytest alone: one process, {count} empty items", count,
         timed_command([*pytest, "-p", "no:xdist", str(items)], OUT))
    show(f"   pytest alone: -n {workers}, {count} empty items", count,
         timed_command([*pytest, *xdist, str(items)], OUT))
    pooled = OUT / f"canonical_x{args.repeat}_workers{workers}.yaml"
    pooled.write_text(config.read_text().replace("allow_code_execution: true", "allow_code_execution: true, "
                                                                               f"workers: {workers}"))
    show(f"4. the plugin: pytest --humaneval-config, a pool of {workers}", count,
         timed_command([*pytest, "-p", "no:xdist", "--humaneval-config", str(pooled)], OUT))
    show(f"   the plugin: pytest --humaneval-config -n {workers}", count,
         timed_command([*pytest, *xdist, "--humaneval-config", str(config)], OUT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
