"""What an installed pytest-rerunfailures costs an xdist benchmark run, side by side, as a ratio.

    python bench/rerunfailures_cost.py [--repeat 10] [--pairs 3] [--workers 2] [--reruns N]

The same samples file as compare_reference.py (every canonical solution `--repeat` times: 164 x 10 = 1,640),
`pytest --humaneval-config CFG -q -n 2` as a whole process, in alternated pairs: with pytest-rerunfailures loaded
(as installed by the test extra), then with `-p no:rerunfailures`. With `--reruns N` the first command also asks
for reruns (which never apply to samples: each still runs once) and pays what that costs. The figure to quote is
the median of the per-pair ratios (time with it / time without it): 1.00 means it costs nothing. Every run must
pass every sample. Needs pytest-rerunfailures installed (exit 2 otherwise).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys

from compare_reference import OUT, timed, write_inputs  # noqa: E402  (bench/ is this script's folder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10, help="samples per problem (canonical solution copies)")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="xdist workers (-n)")
    parser.add_argument("--reruns", type=int, default=None, help="also ask for reruns in the run with the plugin")
    args = parser.parse_args()
    if importlib.util.find_spec("pytest_rerunfailures") is None:
        print("pytest-rerunfailures is not installed in this venv: nothing to measure "
              "(pip install pytest-rerunfailures)", file=sys.stderr)
        return 2
    os.environ.pop("PYTEST_ADDOPTS", None)  # the commands below say what is loaded
    _, config, count = write_inputs(args.repeat)
    base = [sys.executable, "-m", "pytest", "--humaneval-config", str(config), "-q", "-n", str(args.workers),
            "-p", "no:cacheprovider"]
    reruns = ["--reruns", str(args.reruns)] if args.reruns is not None else []
    commands = {"with pytest-rerunfailures" + (f" (--reruns {args.reruns})" if reruns else ""):
                [*base, *reruns, "--humaneval-report", str(OUT / "reruns-with.json")],
                "without it (-p no:rerunfailures)":
                [*base, "-p", "no:rerunfailures", "--humaneval-report", str(OUT / "reruns-without.json")]}
    rows: list[list[float]] = []
    for pair in range(args.pairs):
        times = [timed(command, OUT) for command in commands.values()]
        rows.append(times)
        print(f"pair {pair + 1}: " + "; ".join(f"{name} {seconds:.2f} s ({count / seconds:.0f} samples/s)"
                                               for name, seconds in zip(commands, times, strict=True))
              + f"; ratio {times[0] / times[1]:.2f}")
    for name in ("with", "without"):
        report = json.loads((OUT / f"reruns-{name}.json").read_text())
        if report["counts"]["passed"] != count:
            sys.exit(f"the run {name} pytest-rerunfailures did not pass every sample: the timing is meaningless")
    print(f"\n{count} samples, -n {args.workers}, {args.pairs} alternated pairs: median per-pair ratio (time with "
          f"pytest-rerunfailures / time without) {statistics.median(a / b for a, b in rows):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
