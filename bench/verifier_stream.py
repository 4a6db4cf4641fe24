"""A long stream through ``Verifier.stream``: does its memory stay flat?

    python bench/verifier_stream.py [--samples 200000] [--distinct-every 10] [--checkpoint 20000]

A generator yields HumanEval samples without end in sight of the Verifier (cycling over the problems: the
canonical solution, or a wrong body); one sample in `--distinct-every` is a text never seen before (a trailing
comment with its number), so it is executed, and the others repeat a recent sample, judged once
(`dedupe`, remembered for the last few thousand). The script reads this process's resident memory (VmRSS) and
peak (VmHWM) at every checkpoint and says whether the peak at the end is within 10% of the peak at the first
checkpoint. Memory of the sandboxes' own processes is not this process's: each is bounded per sample.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Iterator

from common import write_record

from pytest_humaneval import Verifier
from pytest_humaneval.data.dataset import load_problems


def memory_kib() -> tuple[int, int]:
    """(VmRSS, VmHWM) of this process."""
    fields = {}
    for line in open("/proc/self/status"):
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def samples(count: int, distinct_every: int) -> Iterator[tuple[str, str]]:
    problems = load_problems()[1]
    for index, problem in zip(range(count), itertools.cycle(problems)):
        body = problem.canonical_solution if index % 2 else "    return None\n"
        if index % distinct_every == 0:
            body += f"# sample {index}\n"
        yield problem.task_id, body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=200_000)
    parser.add_argument("--distinct-every", type=int, default=10)
    parser.add_argument("--checkpoint", type=int, default=20_000)
    args = parser.parse_args()
    points = []
    started = time.perf_counter()
    with Verifier("humaneval") as verifier:
        passed = 0
        for verdict in verifier.stream(samples(args.samples, args.distinct_every)):
            passed += verdict.passed
            done = verdict.index + 1
            if done % args.checkpoint == 0 or done == args.samples:
                rss, peak = memory_kib()
                points.append({"samples": done, "rss_mib": rss / 1024, "peak_mib": peak / 1024,
                               "seconds": time.perf_counter() - started, "passed": passed})
                print(f"{done:8} samples  {points[-1]['seconds']:7.1f} s  RSS {rss / 1024:6.1f} MiB  "
                      f"peak {peak / 1024:6.1f} MiB", flush=True)
    first, last = points[0], points[-1]
    flat = last["peak_mib"] <= 1.10 * first["peak_mib"]
    figures = {"samples": last["samples"], "distinct_every": args.distinct_every,
               "peak_mib_first_checkpoint": first["peak_mib"], "peak_mib_end": last["peak_mib"], "flat": flat,
               "samples_per_s": last["samples"] / last["seconds"]}
    print(json.dumps(figures, indent=2))
    write_record("verifier_stream", figures, {"points": points})
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(main())
