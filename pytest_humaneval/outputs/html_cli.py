"""`python -m pytest_humaneval html`: the HTML page of a finished run, from its saved report and results.

Neither file holds the prompts (the results would grow by a prompt per sample), so they come from the dataset:
``--dataset NAME`` (any name a config's ``dataset:`` takes) or ``--dataset PATH``, or the dataset the report
names when it is one of those (``openai_humaneval``, ``humanevalplus``, ``mbppplus``...); otherwise the page
has none and says how to add them. Given the same inputs, the page is the one ``--humaneval-html`` writes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..data import impossible, releases
from ..data.dataset import BUNDLED_NAME, DatasetError, IORowsFound, load_problems, read_jsonl
from ..data.io_problems import load_io_dataset
from ..scoring.schema import read_report_object
from .html_page import render

__all__ = ["InputError", "build_page", "load_report", "load_results"]

ROW_KEYS = (("task_id", str, "a string"), ("sample", int, "an integer"), ("status", str, "a string"))


class InputError(ValueError):
    """An input file that cannot be used; the message names the file (and line) and what is wrong."""


def load_report(path: Path) -> dict[str, Any]:
    report = read_report_object(path, InputError)
    for key, kind in (("measurements", dict), ("problems", dict), ("dataset", dict), ("run", dict),
                      ("counts", dict)):
        if not isinstance(report.get(key), kind):
            found = "nothing" if key not in report else type(report[key]).__name__
            raise InputError(f"{path}: {key}: expected a JSON object (a pytest-humaneval report), found {found}")
    if "breakdown" in report:
        _check_breakdown(path, report["breakdown"])
    return report


def _check_breakdown(path: Path, breakdown: Any) -> None:
    """A report's score per difficulty and platform (LiveCodeBench's rows) as a run writes it: the page formats
    its numbers."""
    if not isinstance(breakdown, dict):
        raise InputError(f"{path}: breakdown: expected a JSON object (facet -> group -> score), found "
                         f"{type(breakdown).__name__}")
    for facet, groups in breakdown.items():
        if not isinstance(groups, dict):
            raise InputError(f"{path}: breakdown: {facet}: expected a JSON object (group -> score), found "
                             f"{type(groups).__name__}")
        for name, group in groups.items():
            if not (isinstance(group, dict) and _is_int(group.get("problems"))
                    and isinstance(group.get("pass_at"), dict)
                    and all(value is None or _is_number(value) for value in group["pass_at"].values())):
                raise InputError(f'{path}: breakdown: {facet}: {name}: expected {{"problems": an integer, '
                                 f'"pass_at": {{"pass@<k>": a number or null}}}}, found {json.dumps(group)[:80]}')


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def load_results(path: Path) -> list[dict[str, Any]]:
    rows = []
    try:
        for number, row in read_jsonl(Path(path)):
            if not isinstance(row, dict):
                raise InputError(f"{path}:{number}: expected a results row (a JSON object), found "
                                 f"{type(row).__name__}")
            for key, kind, expected in ROW_KEYS:
                if not isinstance(row.get(key), kind) or isinstance(row.get(key), bool):
                    found = json.dumps(row[key])[:40] if key in row else "nothing"
                    raise InputError(f"{path}:{number}: {key}: expected {expected}, found {found}")
            rows.append(row)
    except DatasetError as exc:
        raise InputError(str(exc)) from exc
    return rows


def _problems(report: dict[str, Any], dataset: str | None) -> dict[str, dict[str, str]] | None:
    name = report["dataset"].get("name")
    if dataset is None:
        if name != BUNDLED_NAME and name not in releases.RELEASES and name not in impossible.NAMES:
            print(f"note: no prompts on the page: the report's dataset is {name!r}, none of the datasets a config "
                  f"names ({', '.join(releases.NAMES)}); pass --dataset PATH to add them", file=sys.stderr)
            return None
        dataset = releases.HUMANEVAL if name == BUNDLED_NAME else name
    try:
        file = _dataset_file(dataset)
        try:
            _, problems = load_problems(file)
        except IORowsFound:  # standard-input or functional problems (LiveCodeBench's rows...), read as a run reads them
            assert file is not None  # the bundled HumanEval is not one
            problems = load_io_dataset(file).problems
        # An impossible dataset's prompts carry the instruction the run chose, as the run's own page shows them.
        instruction = ((report["dataset"].get("settings") or {}).get("impossible_instruction")
                       or impossible.DEFAULT_INSTRUCTION)
        if instruction not in impossible.INSTRUCTIONS:
            raise InputError(f"report: dataset.settings.impossible_instruction: expected one of "
                             f"{', '.join(impossible.INSTRUCTIONS)}, found {instruction!r}")
        problems = impossible.with_instruction(problems, instruction, str(dataset))
    except DatasetError as exc:
        raise InputError(str(exc)) from exc
    by_task = {p.task_id: p for p in problems}
    missing = [task for task in report["problems"] if task not in by_task]
    if missing:
        raise InputError(f"{dataset or 'the bundled dataset'}: expected every problem of the report, found no "
                         f"{missing[0]} ({len(missing)} missing): is it the dataset of this run?")
    return {task: {"prompt": by_task[task].prompt, "test": by_task[task].test} for task in report["problems"]}


def _dataset_file(dataset: str) -> Path | None:
    """The file of ``--dataset``: a name a config's ``dataset:`` takes (a name wins over a file of that name, as
    there), else a path; None: the bundled HumanEval."""
    if dataset == releases.HUMANEVAL:
        return None
    if dataset in releases.RELEASES:
        return releases.resolve(dataset, "--dataset")
    if dataset in impossible.NAMES:
        try:
            return impossible.bundled(dataset, "--dataset")
        except DatasetError as exc:
            raise InputError(str(exc)) from exc
    path = Path(dataset).expanduser()
    if not path.is_file():
        what = "a folder" if path.is_dir() else "no such file"
        raise InputError(f"--dataset: expected one of {', '.join(releases.NAMES)}, or the path of a JSONL(.gz) "
                         f"dataset file, found {dataset!r} ({what})")
    return path


def _baseline(report: dict[str, Any], path: str | None) -> dict[str, Any] | None:
    if path is None:
        named = ((report.get("gate") or {}).get("baseline") or {}).get("path")
        if not named:
            return None
        if not Path(named).is_file():
            print(f"note: the report's gate baseline {named} is not there: the page shows no baseline "
                  "(pass --baseline PATH)", file=sys.stderr)
            return None
        path = named
    return load_report(Path(path))


def build_page(report_path: str, results_path: str, output: str, dataset: str | None = None,
               baseline: str | None = None) -> int:
    try:
        report = load_report(Path(report_path))
        rows = load_results(Path(results_path))
        page = render(report, rows, _problems(report, dataset), _baseline(report, baseline))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    target = Path(output)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page, encoding="utf-8")
    print(f"wrote {target} ({len(rows)} samples, {target.stat().st_size / 1e6:.1f} MB)")
    return 0
