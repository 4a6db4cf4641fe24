"""The library's judge on HumanEval+ against EvalPlus's own check, called as RL reward code calls it, side by side.

    python bench/verifier_evalplus.py [--pairs 3] [--repeat 10] [--threads 4]

Every sample is executed on both sides (no two are the same text): the 164 canonical solutions `--repeat` times,
each copy made distinct by a trailing comment (1,640 distinct programs), judged on HumanEval+ v0.1.10 (the shared
release, the one the plugin bundles), base and plus inputs.

- EvalPlus: `evalplus.evaluate.check_correctness(...)` from PyPI's `evalplus==0.3.1` (its own venv, as
  compare_evalplus.py installs it, with that script's HumanEval/32 oracle fix on PYTHONPATH, else the canonical
  solution of HumanEval/32 fails there), which calls `untrusted_check` for the base inputs, then the plus ones; its
  expected outputs from its own cache (`get_groundtruth`, computed once, outside the timing), from a thread pool of
  `--threads` (4 by default), the way reward code built on it calls it; with EvalPlus master's 4 s floor (0.3.1's
  own is 1 s), as compare_evalplus.py runs it, so both sides have the same limits (factor 4);
- Verifier: `Verifier("humanevalplus", dedupe=False).verify(samples)` from this checkout (its defaults: the 4 s
  floor and factor 4), its sandboxes started first.

Each side runs as a process of its own; a pair runs EvalPlus, then the Verifier. Figures: samples/s of the judging
call, CPU per sample (the machine's busy CPU time while the side's process ran, start-up included, over the
samples: run it on a quiet machine), and whether base and plus verdicts agree sample by sample. The figure to
quote is the median of the per-pair ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import textwrap
import time

from common import OUT, write_record
from compare_evalplus import dataset_for_evalplus, evalplus_venv, fixed_copy
from verifier_throughput import timed

from pytest_humaneval.data.dataset import load_problems

EVALPLUS = textwrap.dedent("""
    import json, sys, time
    from concurrent.futures import ThreadPoolExecutor
    from evalplus.data import get_human_eval_plus, get_human_eval_plus_hash
    from evalplus.evaluate import check_correctness, get_groundtruth
    from evalplus.eval import PASS
    problems = get_human_eval_plus()
    expected = get_groundtruth(problems, get_human_eval_plus_hash(), [])
    rows = [json.loads(line) for line in open(sys.argv[1])]
    def judge(item):
        index, row = item
        problem = problems[row["task_id"]]
        result = check_correctness("humaneval", index, problem, problem["prompt"] + row["completion"],
                                   expected[row["task_id"]], min_time_limit=4.0)
        return result["base"][0] == PASS, result["plus"][0] == PASS
    started = time.perf_counter()
    with ThreadPoolExecutor(int(sys.argv[2])) as pool:
        results = list(pool.map(judge, enumerate(rows)))
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "base": [r[0] for r in results], "plus": [r[1] for r in results]}))
""")

VERIFIER = textwrap.dedent("""
    import json, sys, time
    from pytest_humaneval import Verifier
    rows = [json.loads(line) for line in open(sys.argv[1])]
    started = time.perf_counter()
    with Verifier("humanevalplus", dedupe=False) as verifier:
        ready = time.perf_counter()
        verdicts = verifier.verify(rows)
        seconds = time.perf_counter() - ready
    print(json.dumps({"seconds": seconds, "start_s": ready - started, "isolation": verifier.isolation,
                      "base": [v.base_status == "passed" for v in verdicts],
                      "plus": [v.plus_status == "passed" for v in verdicts]}))
""")


def write_samples(repeat: int) -> str:
    OUT.mkdir(exist_ok=True)
    path = OUT / f"verifier_evalplus_distinct_{repeat}.jsonl"
    rows = [{"task_id": p.task_id, "completion": f"{p.canonical_solution}\n# copy {copy}\n"}
            for copy in range(repeat) for p in load_problems()[1]]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    samples = write_samples(args.repeat)
    count = args.repeat * 164
    python = evalplus_venv()
    env = {"HUMANEVAL_OVERRIDE_PATH": str(dataset_for_evalplus()), "XDG_CACHE_HOME": str(OUT / "evalplus-cache"),
           "PYTHONPATH": str(fixed_copy(python))}
    os.environ.update(env)  # (timed() runs each side with this process's environment)
    pairs = []
    for pair in range(args.pairs):
        evalplus, evalplus_cpu = timed([str(python), "-c", EVALPLUS, samples, str(args.threads)])
        verifier, verifier_cpu = timed([sys.executable, "-c", VERIFIER, samples])
        differ = sum((a, b) != (c, d) for a, b, c, d in zip(evalplus["base"], evalplus["plus"], verifier["base"],
                                                             verifier["plus"], strict=True))
        row = {"evalplus_s": evalplus["seconds"], "verifier_s": verifier["seconds"],
               "verifier_start_s": verifier["start_s"], "evalplus_cpu_s": evalplus_cpu,
               "verifier_cpu_s": verifier_cpu, "ratio": evalplus["seconds"] / verifier["seconds"], "differ": differ,
               "plus_passed": sum(verifier["plus"]), "evalplus_plus_passed": sum(evalplus["plus"]),
               "isolation": verifier["isolation"]}
        pairs.append(row)
        print(f"pair {pair + 1}: EvalPlus {count / row['evalplus_s']:.1f} samples/s "
              f"({1000 * evalplus_cpu / count:.1f} ms CPU each), Verifier {count / row['verifier_s']:.1f} "
              f"samples/s ({1000 * verifier_cpu / count:.1f} ms CPU each, start {row['verifier_start_s']:.2f} s, "
              f"{row['isolation']}), ratio {row['ratio']:.2f}x, verdicts differ {differ} (plus passed: EvalPlus "
              f"{row['evalplus_plus_passed']}, Verifier {row['plus_passed']})", flush=True)
    figures = {"samples": count, "threads": args.threads,
               "ratio_median": statistics.median(p["ratio"] for p in pairs),
               "evalplus_samples_per_s": statistics.median(count / p["evalplus_s"] for p in pairs),
               "verifier_samples_per_s": statistics.median(count / p["verifier_s"] for p in pairs),
               "evalplus_cpu_ms_per_sample": statistics.median(1000 * p["evalplus_cpu_s"] / count for p in pairs),
               "verifier_cpu_ms_per_sample": statistics.median(1000 * p["verifier_cpu_s"] / count for p in pairs),
               "verdicts_differ": max(p["differ"] for p in pairs)}
    print(json.dumps(figures, indent=2))
    write_record("verifier_evalplus", figures, {"pairs": pairs, "when": time.time()})
    return 1 if figures["verdicts_differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
