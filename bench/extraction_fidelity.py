"""Does the answer extraction for today's models keep yesterday's verdicts? Real chat answers, served over chat.

    python bench/extraction_fidelity.py [--raw-dir ../shared/data/real-samples/raw] [--workers 2]

The 328 unfiltered chat answers of gpt-4-turbo-2024-04-09 and gemini-pro (UCLAshuxiao/G5, 164 each, T=0; see
the data's PROVENANCE.md) are served by a loopback OpenAI-compatible chat server, and a real runtime session
(`pytest --humaneval-config ... -n 2`) generates from it and executes what the plugin extracts. The same answers
go through the extraction as it was before reasoning models (``legacy_unwrap`` below, a verbatim copy of
``unwrap_completion`` at commit 57ab0b7: the first Python block) into a samples-mode session, executed in the
same sandbox. Every verdict is compared and every difference printed with the block each rule took.

When the data folder also holds the other human-eval sample files (``../*.jsonl``: 15,744 completions of 19
models), the script checks that the extraction leaves each of them exactly as the old one did.

Exit status 0 when no answer lost its pass; changed verdicts are listed either way. Outputs go to
bench/out/fidelity/.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

from common import OUT as BENCH_OUT
from common import ROOT, tests_on_path, write_record

OUT = BENCH_OUT / "fidelity"
tests_on_path()  # the loopback server of the test suite

from fake_openai import FakeOpenAI, chat, models  # noqa: E402

from pytest_humaneval.completions.extract import extract  # noqa: E402
from pytest_humaneval.data.dataset import load_problems  # noqa: E402

SOURCES = {"gpt-4-turbo": "UCLAshuxiao__human-eval__data__samples_gpt.jsonl.gz",
           "gemini-pro": "UCLAshuxiao__human-eval__data__samples_gemini.jsonl.gz"}
_LEGACY_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def legacy_unwrap(text: str, entry_point: str) -> str:
    """The extraction before reasoning models, unchanged: the first Python block (or first block, or the text)."""
    blocks = _LEGACY_FENCE.findall(text)
    if blocks:
        python = [code for lang, code in blocks if lang.lower() in ("python", "py", "python3", "")]
        code = (python or [blocks[0][1]])[0]
    else:
        code = text
    if re.search(rf"^\s*(async\s+)?def\s+{re.escape(entry_point)}\s*\(", code, re.MULTILINE):
        return "\n" + code
    return code


def read_answers(path: Path) -> dict[str, str]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return {row["task_id"]: row["completion"] for row in map(json.loads, handle)}


def pytest_run(config: Path, results: Path, workers: int) -> dict[str, dict]:
    command = [sys.executable, "-m", "pytest", "--humaneval-config", str(config), "-q", "-p", "no:cacheprovider",
               "-n", str(workers), "--humaneval-results", str(results)]
    subprocess.run(command, cwd=OUT, stdout=subprocess.DEVNULL, check=False)
    return {row["task_id"]: row for row in map(json.loads, results.read_text().splitlines())}


def today(name: str, answers: dict[str, str], workers: int) -> dict[str, dict]:
    """Served over the chat API to a real runtime session: the plugin's extraction, executed."""
    problems = load_problems()[1]

    def script(request, index):
        if request.method == "GET":
            return models("fidelity")
        problem = next(p for p in problems if p.prompt.strip() in request.prompt_text)
        return chat(answers[problem.task_id])

    with FakeOpenAI(script) as server:
        config = OUT / f"{name}-runtime.yaml"
        config.write_text(f"target: {{mode: runtime, endpoint: '{server.url}', model: fidelity}}\n"
                          "params: {allow_code_execution: true, concurrency: 16}\n")
        rows = pytest_run(config, OUT / f"{name}-runtime.jsonl", workers)
    if len(server.posts()) != len(answers):
        raise SystemExit(f"{name}: expected {len(answers)} chat requests, the server saw {len(server.posts())}")
    return rows


def before(name: str, answers: dict[str, str], workers: int) -> dict[str, dict]:
    """The legacy extraction of the same answers, as a samples file through the same sandbox."""
    problems = {p.task_id: p for p in load_problems()[1]}
    samples = OUT / f"{name}-legacy-samples.jsonl"
    rows = ({"task_id": task, "completion": legacy_unwrap(text, problems[task].entry_point)}
            for task, text in answers.items())
    samples.write_text("".join(json.dumps(row) + "\n" for row in rows))
    config = OUT / f"{name}-legacy.yaml"
    config.write_text(f"target: {{mode: samples, samples: {samples.name}}}\nparams: {{allow_code_execution: true}}\n")
    return pytest_run(config, OUT / f"{name}-legacy.jsonl", workers)


CHANGED: list[dict[str, str]] = []  # every changed verdict, for the record


def compare(name: str, answers: dict[str, str], workers: int) -> tuple[int, int]:
    """(verdicts equal, answers that lost a pass); prints each difference."""
    new, old = today(name, answers, workers), before(name, answers, workers)
    problems = {p.task_id: p for p in load_problems()[1]}
    equal = lost = 0
    for task in answers:
        if new[task]["status"] == old[task]["status"]:
            equal += 1
            continue
        lost += old[task]["status"] == "passed"
        note = extract(answers[task], problems[task].entry_point, problems[task].prompt).note
        print(f"  {name} {task}: {old[task]['status']} -> {new[task]['status']} ({note})")
        CHANGED.append({"model": name, "task_id": task, "legacy": old[task]["status"], "today": new[task]["status"],
                        "note": note or ""})
    passed = {label: sum(rows[task]["status"] == "passed" for task in answers) for label, rows in (("legacy", old),
                                                                                               ("today", new))}
    print(f"{name}: {equal}/{len(answers)} verdicts equal, {len(answers) - equal} changed, {lost} lost a pass "
          f"(passed: legacy {passed['legacy']}, today {passed['today']})")
    return equal, lost


def texts_unchanged(folder: Path) -> tuple[int, int]:
    """(completions, completions whose extraction differs from the legacy one) over the other sample files."""
    problems = {p.task_id: p for p in load_problems()[1]}
    seen = changed = 0
    for path in sorted(folder.glob("*.jsonl")):
        for row in map(json.loads, path.read_text(encoding="utf-8").splitlines()):
            problem = problems.get(row.get("task_id"))
            if problem is None or not isinstance(row.get("completion"), str):
                continue
            seen += 1
            if extract(row["completion"], problem.entry_point, problem.prompt).completion != \
                    legacy_unwrap(row["completion"], problem.entry_point):
                changed += 1
                print(f"  {path.name} {row['task_id']}: extraction differs")
    return seen, changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--raw-dir", type=Path, default=ROOT.parent / "shared" / "data" / "real-samples" / "raw")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    missing = [f for f in SOURCES.values() if not (args.raw_dir / f).is_file()]
    if missing:
        print(f"{args.raw_dir}: expected the G5 raw chat answers ({', '.join(missing)}), found none; "
              "pass --raw-dir", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    total = equal = lost = 0
    for name, file in SOURCES.items():
        answers = read_answers(args.raw_dir / file)
        same, worse = compare(name, answers, args.workers)
        total, equal, lost = total + len(answers), equal + same, lost + worse
    print(f"served over chat: {equal}/{total} verdicts equal to the legacy extraction, {lost} lost a pass")
    seen, changed = texts_unchanged(args.raw_dir.parent)
    if seen:
        print(f"other sample files: {seen - changed}/{seen} completions extracted exactly as before")
    write_record("extraction-fidelity", {"answers": total, "equal": equal, "lost_a_pass": lost,
                                         "other_completions": seen, "extracted_differently": changed},
                 {"changed": CHANGED})
    return 0 if lost == 0 and changed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
