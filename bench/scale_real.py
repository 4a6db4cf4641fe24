"""The n = 200 scale run on real completions: 32,800 items, repeated as a run at temperature 0.2 repeats.

    python bench/scale_real.py [--model zephyr7b_alpha] [--n 200] [--pytest-args '-n 2']

A model's samples file of `../shared/data/real-samples` (Zephyr-7B-alpha at T = 0.2 by default: 10 samples a
problem), each problem's samples cycled to `--n` (a T = 0.2 run draws the same few completions again and
again), judged by `pytest --humaneval-config` (with `params.dedupe` on, the default). Prints the wall time of
the whole process, the items per second and the controller's peak RSS (bench/peak_rss.py).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from collections import defaultdict

from common import OUT, REAL_SAMPLES, ROOT, write_record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="zephyr7b_alpha")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--pytest-args", default="")
    parser.add_argument("--no-dedupe", action="store_true")
    args = parser.parse_args()
    by_task: dict[str, list[str]] = defaultdict(list)
    for line in (REAL_SAMPLES / f"{args.model}.jsonl").read_text().splitlines():
        row = json.loads(line)
        by_task[row["task_id"]].append(row["completion"])
    OUT.mkdir(exist_ok=True)
    samples = OUT / f"scale_{args.model}_n{args.n}.jsonl"
    with samples.open("w") as handle:
        for task_id, completions in by_task.items():
            for index in range(args.n):
                handle.write(json.dumps({"task_id": task_id, "completion": completions[index % len(completions)]})
                             + "\n")
    config = OUT / f"scale_{args.model}_n{args.n}.yaml"
    config.write_text(f"target: {{mode: samples, samples: {samples.name}}}\n"
                      f"params: {{allow_code_execution: true, k: [1, 10, 100]"
                      f"{', dedupe: false' if args.no_dedupe else ''}}}\n")
    command = [sys.executable, "-m", "pytest", "--humaneval-config", str(config), "-q", "-p", "no:cacheprovider",
               "-p", "bench.peak_rss", *shlex.split(args.pytest_args)]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.perf_counter() - started
    lines = [line for line in done.stdout.splitlines() if line.startswith(("bench:", "pass@"))]
    print("\n".join(lines))
    items = len(by_task) * args.n
    print(f"{items} items of {args.model} (n = {args.n}, dedupe {'off' if args.no_dedupe else 'on'}, "
          f"{args.pytest_args or 'no -n'}): {elapsed:.1f} s whole process, {items / elapsed:.0f} items/s")
    peak = next((line for line in lines if line.startswith("bench: controller peak RSS")), "")
    write_record("scale-real", {"model": args.model, "n": args.n, "items": items, "dedupe": not args.no_dedupe,
                                "pytest_args": args.pytest_args, "wall_s": elapsed, "items_per_s": items / elapsed,
                                "controller_peak_rss_mib": int(peak.split()[4]) if peak else None},
                 {"summary_lines": lines})
    return 0


if __name__ == "__main__":
    sys.exit(main())
