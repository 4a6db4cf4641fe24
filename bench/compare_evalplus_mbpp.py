"""MBPP+ verdicts: EvalPlus 0.3.1's and the plugin's, per sample, on the canonical solutions and generated samples.

    python bench/compare_evalplus_mbpp.py [--tasks N] [--task ID ...] [--slow-every K] [--evalplus-venv PATH]

For each MBPP+ v0.2.0 task (the bundled release; the first N in natural order with --tasks), samples are
generated from its canonical solution, each a whole program (an EvalPlus ``solution`` row):

- ``canonical``: the canonical solution as the release holds it;
- ``raising``: raises ValueError on the inputs whose repr has a length divisible by 3;
- ``wrong``: returns a changed value (a number + 1, a string + "x", a sequence reversed with one more item, a
  bool negated, None as 0) on the inputs whose repr has a length of 1 modulo 4;
- ``type-confused``: returns tuples as lists, lists as tuples, ints as floats, sets as sorted lists;
- ``slow`` (every K-th task only: each costs seconds): sleeps 3 s on the inputs whose repr has a length
  divisible by 5, past 0.3.1's 1 s floor (x 4 the canonical time: slower tasks may pass it there and here alike).

(repr lengths are the same in both harnesses: the inputs are rebuilt alike, and a set's repr has the same length
in any order.) Both harnesses judge the same samples file: EvalPlus as `python -m evalplus.evaluate --dataset mbpp
--parallel 2` with MBPP_OVERRIDE_PATH at the release's rows of those tasks (lines byte for byte, decompressed:
0.3.1 reads a .jsonl), its cache in bench/out/mbpp-evalplus-cache; the plugin with `dataset: mbppplus` (the
bundled file), `params.plus.min_time_limit_s: 1` (0.3.1's floor), without -n. Mbpp/255 is left out: its expected
outputs are 1.4 GB (over a million 77-tuples per output), more than the plugin's judge holds, and no such output
fits in one reply; the plugin reports it as a harness_error (docs/datasets.md).

The record also holds the file's floor: the seconds the samples' own calls need in any harness (for each suite,
the canonical solution's time on every input the sample ran, up to the one that failed it, plus the limit of an
input that timed out), over 2 CPUs; EvalPlus's time over that floor is the best ratio any harness can reach here.

Per sample, base_status and plus_status are compared (EvalPlus's "pass"/"fail"/"timeout" as passed / not passed);
the record, per task and per kind, goes to bench/out/mbpp-verdicts.json. Exit 1 on any disagreement.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from pytest_humaneval.data import plus, releases
from pytest_humaneval.data.dataset import load_dataset, natural_key
from pytest_humaneval.sandbox import _wire

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
LEFT_OUT = {"Mbpp/255": "its expected outputs (1.4 GB) are more than the plugin's judge holds"}
KINDS = ("canonical", "raising", "wrong", "type-confused", "slow")

_WRAP = '''

_humaneval_original = {entry}


def {entry}(*args):
    size = len(repr(args))
{body}
'''
BODIES = {
    "raising": "    if size % 3 == 0:\n        raise ValueError('generated failure')\n"
               "    return _humaneval_original(*args)",
    "wrong": "    out = _humaneval_original(*args)\n    if size % 4 != 1:\n        return out\n"
             "    if isinstance(out, bool):\n        return not out\n"
             "    if isinstance(out, (int, float)):\n        return out + 1\n"
             "    if isinstance(out, str):\n        return out + 'x'\n"
             "    if isinstance(out, (list, tuple)):\n        return type(out)(list(out)[::-1] + [0])\n"
             "    if out is None:\n        return 0\n    return out",
    "type-confused": "    out = _humaneval_original(*args)\n"
                     "    if isinstance(out, bool):\n        return out\n"
                     "    if isinstance(out, tuple):\n        return list(out)\n"
                     "    if isinstance(out, list):\n        return tuple(out)\n"
                     "    if isinstance(out, int):\n        return float(out)\n"
                     "    if isinstance(out, set):\n        return sorted(out, key=repr)\n    return out",
    "slow": "    if size % 5 == 0:\n        import time\n        time.sleep(3)\n    return _humaneval_original(*args)",
}


def release_rows() -> dict[str, str]:
    """task_id -> its line of the bundled MBPP+ release, as it is."""
    path = releases.resolve("mbppplus", "bench")
    lines = gzip.decompress(path.read_bytes()).decode("utf-8").split("\n")
    return {json.loads(line)["task_id"]: line for line in lines if line.strip()}


def samples_for(tasks: list[str], rows: dict[str, str], slow_every: int) -> list[dict[str, str]]:
    samples = []
    for position, task in enumerate(tasks):
        row = json.loads(rows[task])
        canonical, entry = row["canonical_solution"], row["entry_point"]
        samples.append({"task_id": task, "solution": canonical, "kind": "canonical"})
        for kind, body in BODIES.items():
            if kind == "slow" and position % slow_every:
                continue
            samples.append({"task_id": task, "solution": canonical + _WRAP.format(entry=entry, body=body),
                            "kind": kind})
    return samples


def run_evalplus(python: Path, dataset: Path, samples: Path) -> dict[tuple[str, int], tuple[bool, bool]]:
    env = dict(os.environ, MBPP_OVERRIDE_PATH=str(dataset), XDG_CACHE_HOME=str(OUT / "mbpp-evalplus-cache"))
    results = samples.with_name(samples.stem + "_eval_results.json")
    results.unlink(missing_ok=True)
    done = subprocess.run([str(python), "-m", "evalplus.evaluate", "--dataset", "mbpp", "--samples", str(samples),
                           "--parallel", "2", "--i-just-wanna-run"], env=env, cwd=samples.parent,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0 or not results.exists():
        sys.exit(f"evalplus.evaluate failed:\n{done.stdout[-3000:]}")
    verdicts = {}
    for task, rows in json.loads(results.read_text())["eval"].items():
        for index, row in enumerate(rows):
            verdicts[(task, index)] = (row["base_status"] == "pass", row["plus_status"] == "pass")
    return verdicts


def run_plugin(samples: Path) -> dict[tuple[str, int], tuple[bool, bool]]:
    config = samples.with_name("mbpp-plugin.yaml")
    config.write_text(f"target: {{mode: samples, samples: {samples}}}\ndataset: mbppplus\n"
                      "params: {allow_code_execution: true, plus: {min_time_limit_s: 1.0}}\n")
    results = samples.with_name("mbpp-plugin.results.jsonl")
    subprocess.run([sys.executable, "-m", "pytest", "--humaneval-config", str(config), "-q", "-p", "no:cacheprovider",
                    "-p", "no:xdist", "--humaneval-results", str(results)], cwd=samples.parent,
                   stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    verdicts = {}
    for line in results.read_text().splitlines():
        row = json.loads(line)
        verdicts[(row["task_id"], row["sample"])] = (row["base_status"] == "passed", row["plus_status"] == "passed")
    return verdicts


def floor_seconds(results: Path, min_time_limit_s: float = 1.0, factor: float = 4.0) -> dict[str, float]:
    """What the samples' own calls cost in any harness (see the module docstring), from the plugin's results and
    its expected-output table (the canonical solution's times on this machine)."""
    loaded = load_dataset(releases.resolve("mbppplus", "bench"))
    suites = plus.Suites(loaded.sha256, loaded.problems)
    suites.ensure()
    times: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {}
    calls = waits = 0.0
    for line in results.read_text().splitlines():
        row = json.loads(line)
        task = row["task_id"]
        if task not in times:
            _, _, base_s, _, _, plus_s, _ = _wire.decode(suites[task])
            times[task] = (base_s, plus_s)
        for name, seconds in zip(("base", "plus"), times[task], strict=True):
            failed = re.match(r"input #(\d+)", row.get(f"{name}_failure") or "")
            if failed is None:
                calls += sum(seconds)
                continue
            index = int(failed.group(1))
            calls += sum(seconds[:index])
            if row[f"{name}_status"] == "timeout":
                waits += max(min_time_limit_s, factor * seconds[index])
            else:
                calls += seconds[index]
    return {"calls_s": round(calls, 1), "limit_waits_s": round(waits, 1),
            "floor_2_cpus_s": round(calls / 2, 1), "floor_2_cpus_waits_apart_s": round((calls + waits) / 2, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=None, help="the first N tasks only")
    parser.add_argument("--task", action="append", default=None, help="only this task (repeatable): rerun some")
    parser.add_argument("--slow-every", type=int, default=10)
    parser.add_argument("--evalplus-venv", type=Path, default=OUT / "evalplus-venv")
    args = parser.parse_args()
    python = args.evalplus_venv / "bin" / "python"
    if not python.exists():
        sys.exit(f"no EvalPlus venv at {args.evalplus_venv}: python -m venv DIR && DIR/bin/pip install "
                 "evalplus==0.3.1, then --evalplus-venv DIR")
    rows = release_rows()
    tasks = [task for task in sorted(rows, key=natural_key) if task not in LEFT_OUT][:args.tasks]
    if args.task:
        tasks = [task for task in tasks if task in args.task]
    OUT.mkdir(parents=True, exist_ok=True)
    folder = OUT / "mbpp-compare"
    folder.mkdir(exist_ok=True)
    dataset = folder / "MbppPlus-selected.jsonl"
    dataset.write_text("".join(rows[task] + "\n" for task in tasks))
    samples = samples_for(tasks, rows, args.slow_every)
    samples_file = folder / "samples.jsonl"
    samples_file.write_text("".join(json.dumps({"task_id": s["task_id"], "solution": s["solution"]}) + "\n"
                                    for s in samples))
    kinds, index = {}, Counter()
    for sample in samples:
        kinds[(sample["task_id"], index[sample["task_id"]])] = sample["kind"]
        index[sample["task_id"]] += 1
    started = time.monotonic()
    theirs = run_evalplus(python, dataset, samples_file)
    evalplus_s = time.monotonic() - started
    started = time.monotonic()
    ours = run_plugin(samples_file)
    plugin_s = time.monotonic() - started
    per_kind: dict[str, Counter[str]] = {kind: Counter() for kind in KINDS}
    disagreements = []
    for key, kind in kinds.items():
        mine, their = ours.get(key), theirs.get(key)
        counts = per_kind[kind]
        counts["samples"] += 1
        for suite, position in (("base", 0), ("plus", 1)):
            if their is not None and their[position]:
                counts[f"evalplus_{suite}_pass"] += 1
            if mine is not None and mine[position]:
                counts[f"plugin_{suite}_pass"] += 1
        if mine != their:
            disagreements.append({"task_id": key[0], "sample": key[1], "kind": kind, "evalplus": their,
                                  "plugin": mine})
    per_task: dict[str, dict[str, list[int]]] = {}
    for key in kinds:
        counts = per_task.setdefault(key[0], {"evalplus": [0, 0], "plugin": [0, 0]})
        for who, verdicts in (("evalplus", theirs), ("plugin", ours)):
            base, plus_ = verdicts.get(key) or (False, False)
            counts[who][0] += base
            counts[who][1] += base and plus_
    floor = floor_seconds(samples_file.with_name("mbpp-plugin.results.jsonl"))
    tasks_by_kind = {kind: len({task for (task, _), k in kinds.items() if k == kind}) for kind in KINDS}
    record = {"evalplus": "0.3.1", "dataset": "MBPP+ v0.2.0 (bundled)", "tasks": len(tasks),
              "left_out": LEFT_OUT, "min_time_limit_s": 1.0, "per_kind": {k: dict(v) for k, v in per_kind.items()},
              "tasks_per_kind": tasks_by_kind,
              "per_task_base_and_plus_passes": per_task,
              "tasks_with_equal_counts": sum(c["evalplus"] == c["plugin"] for c in per_task.values()),
              "disagreements": disagreements,
              "seconds": {"evalplus": round(evalplus_s, 1), "plugin": round(plugin_s, 1)},
              "floor": floor, "best_ratio_on_2_cpus": round(evalplus_s / floor["floor_2_cpus_s"], 2),
              "note": "seconds are whole processes, one run each, EvalPlus first: quote them only from a run with "
                      "nothing else on the machine and both caches warm"}
    name = "mbpp-verdicts.json" if not args.task else "mbpp-verdicts-rerun.json"
    (OUT / name).write_text(json.dumps(record, indent=2) + "\n")
    for kind in KINDS:
        c = per_kind[kind]
        print(f"{kind:14} {tasks_by_kind[kind]:3} tasks {c['samples']:4} samples: base pass evalplus "
              f"{c['evalplus_base_pass']} plugin {c['plugin_base_pass']}; plus pass evalplus "
              f"{c['evalplus_plus_pass']} plugin {c['plugin_plus_pass']}")
    print(f"per task (base passes, base-and-plus passes): {record['tasks_with_equal_counts']}/{len(per_task)} "
          "tasks equal")
    print(f"seconds: EvalPlus {evalplus_s:.1f}, the plugin {plugin_s:.1f} ({evalplus_s / plugin_s:.2f}x); the "
          f"samples' own calls {floor['calls_s']} s and limit waits {floor['limit_waits_s']} s: on 2 CPUs no harness "
          f"takes less than {floor['floor_2_cpus_s']} s ({record['best_ratio_on_2_cpus']}x EvalPlus at best)")
    print(f"{len(disagreements)} disagreement(s) of {len(kinds)} samples; record: {OUT / name}")
    for item in disagreements[:20]:
        print("  ", item)
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
