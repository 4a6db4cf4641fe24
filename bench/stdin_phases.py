"""Where a standard-input test's CPU goes: each process of one warm sandbox, per test, against the programs' own work.

    python bench/stdin_phases.py [--tests 10] [--samples 80] [--isolation auto] [--pairs 3]

One sandbox (``Sandbox``, no pool, no pytest), a program that reads two numbers and prints their sum, ``--tests``
tests a sample, each test a fresh candidate as the judge runs it, with LiveCodeBench's environment as its preamble
(as every program of these problems gets it). After five warm-up samples, ``--samples`` samples; the CPU each process
of the sandbox's tree used in between (``/proc/PID/stat``: its own, and its reaped children's, which for the fork
server are the candidates'), per test. Then, for scale, the same program's own work in this process on the same
inputs, nothing around it (``exec`` on a StringIO): the part of a test no judge can save.

It answers the design question left by issue 52's 3x goal (bench/compare_lcb.py): what a test costs that is not the
program, and which process pays it.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import write_record  # noqa: E402

from pytest_humaneval import sandbox  # noqa: E402
from pytest_humaneval.data.io_problems import ENVIRONMENT  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
PROGRAM = "a, b = map(int, input().split())\nprint(a + b)\n"


def _snapshot() -> dict[int, tuple[str, list[float]]]:
    """{pid: (role, [utime, stime, cutime, cstime])} of this process's tree."""
    found: dict[int, tuple[str, list[float]]] = {}
    stack = [os.getpid()]
    while stack:
        pid = stack.pop()
        try:
            stat = open(f"/proc/{pid}/stat").read()
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            found[pid] = (_role(pid, cmdline), [int(v) / TICK for v in stat.rpartition(")")[2].split()[11:15]])
            for task in os.listdir(f"/proc/{pid}/task"):
                stack += [int(child) for child in open(f"/proc/{pid}/task/{task}/children").read().split()]
        except (OSError, ValueError):
            continue
    return found


HARNESS = "harness (this process)"


def _role(pid: int, cmdline: list[bytes]) -> str:
    if pid == os.getpid():
        return HARNESS
    return Path(cmdline[2].decode(errors="replace")).name if len(cmdline) > 2 else "?"


def one_run(isolation: str, tests: int, samples: int) -> dict:
    cases = json.dumps([[f"{i} {i + 1}\n", f"{2 * i + 1}\n"] for i in range(tests)])
    box = sandbox.Sandbox(isolation).start()
    try:
        def program(k: int) -> sandbox.Program:
            return sandbox.Program("", f"{PROGRAM}# {k}\n", cases, "", whole=True, io="lcb", io_tests=tests,
                                   preamble=ENVIRONMENT)
        limits = sandbox.Limits(timeout_s=6)
        for k in range(5):
            assert box.run(program(-k - 1), limits).status is sandbox.Status.PASSED
        before, started = _snapshot(), time.perf_counter()
        for k in range(samples):
            box.run(program(k), limits)
        wall, after = time.perf_counter() - started, _snapshot()
        per_test = 1000 / (samples * tests)
        processes = []
        for pid, (role, times) in sorted(after.items()):
            old = before.get(pid, (role, [0.0] * 4))[1]
            delta = [(new - was) * per_test for new, was in zip(times, old, strict=True)]
            processes.append({"process": role, "pid": pid, "own_user_ms": round(delta[0], 3),
                              "own_system_ms": round(delta[1], 3), "reaped_user_ms": round(delta[2], 3),
                              "reaped_system_ms": round(delta[3], 3)})
        sandbox_own = sum(p["own_user_ms"] + p["own_system_ms"] for p in processes if p["process"] != HARNESS)
        candidates = [sum(p[key] for p in processes) for key in ("reaped_user_ms", "reaped_system_ms")]
        harness = sum(p["own_user_ms"] + p["own_system_ms"] for p in processes if p["process"] == HARNESS)
        return {"isolation": box.isolation, "wall_ms_per_test": round(wall * per_test, 3), "processes": processes,
                "candidates_user_ms": round(candidates[0], 3), "candidates_system_ms": round(candidates[1], 3),
                "sandbox_processes_ms": round(sandbox_own, 3), "harness_ms": round(harness, 3),
                "by_process_ms": sorted((round(p["own_user_ms"] + p["own_system_ms"], 3) for p in processes
                                         if p["process"] != HARNESS), reverse=True)}
    finally:
        box.close()


def own_work(tests: int, repeat: int = 200) -> float:
    """The program's own CPU per test, in this process, on the same inputs: ms."""
    code, environment = compile(PROGRAM, "prog", "exec"), compile(ENVIRONMENT, "env", "exec")
    plain = compile("", "env", "exec")
    spent = {}
    for name, preamble in (("program", plain), ("program with the environment", environment)):
        started = time.process_time()
        for _ in range(repeat):
            for i in range(tests):
                stdin, stdout = sys.stdin, sys.stdout
                sys.stdin, sys.stdout = io.StringIO(f"{i} {i + 1}\n"), io.StringIO()
                try:
                    namespace = {"__name__": "__main__"}
                    exec(preamble, namespace)
                    exec(code, namespace)
                finally:
                    sys.stdin, sys.stdout = stdin, stdout
        spent[name] = 1000 * (time.process_time() - started) / (repeat * tests)
    return spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=10)
    parser.add_argument("--samples", type=int, default=80)
    parser.add_argument("--isolation", default="auto")
    parser.add_argument("--pairs", type=int, default=3, help="runs, each in a fresh sandbox; medians are quoted")
    args = parser.parse_args()
    runs = [one_run(args.isolation, args.tests, args.samples) for _ in range(args.pairs)]

    def median(key: str) -> float:
        return statistics.median(run[key] for run in runs)

    work = own_work(args.tests)
    print(f"isolation {runs[0]['isolation']}, {args.tests} tests a sample, {args.samples} samples, {args.pairs} runs "
          "(medians; CPU ms per test):")
    both = median("candidates_user_ms") + median("candidates_system_ms")
    print(f"  the candidates (forked, run, ended)     {both:6.3f}"
          f"  (user {median('candidates_user_ms'):.3f}, system {median('candidates_system_ms'):.3f})")
    print(f"  the sandbox's own processes             {median('sandbox_processes_ms'):6.3f}  (by process in one run, "
          f"largest first: {', '.join(f'{ms:.3f}' for ms in runs[0]['by_process_ms'] if ms)})")
    print(f"  the harness (this process)              {median('harness_ms'):6.3f}")
    print(f"  wall, one sandbox                       {median('wall_ms_per_test'):6.3f}")
    for name, ms in work.items():
        print(f"  the {name} alone, in this process: {ms:.3f}")
    write_record("stdin-phases", {"args": vars(args), "own_work_ms": work,
                                  **{key: median(key) for key in ("candidates_user_ms", "candidates_system_ms",
                                                                  "sandbox_processes_ms", "harness_ms",
                                                                  "wall_ms_per_test")}}, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
