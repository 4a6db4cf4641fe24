"""``python -m pytest_humaneval evaluate --samples FILE --dataset NAME``: a samples file scored with no YAML, the
habit EvalPlus (``evalplus.evaluate``) and human-eval (``evaluate_functional_correctness``) users bring.

It is a pytest run of the plugin, in this process, over a config made of the options: the same verdicts, the
same terminal section and the same results, report, Markdown, HTML and JUnit files as
``pytest --humaneval-config`` writes. The run is kept apart from the folder it starts in: its own rootdir and
ini file, no cache, no conftest of the project around it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

from ..data.releases import NAMES

__all__ = ["evaluate"]

OUTPUTS = (("report", "--humaneval-report"), ("results", "--humaneval-results"),
           ("markdown", "--humaneval-markdown"), ("html", "--humaneval-html"), ("junitxml", "--junitxml"))


def evaluate(samples: str, dataset: str, k: list[int] | None, limit: int | None, timeout_s: float | None,
             isolation: str | None, workers: int | None, outputs: dict[str, str | None], quiet: bool,
             pytest_args: list[str], allow_subset: bool = False, extract: bool = False,
             impossible_instruction: str | None = None) -> int:
    """Exit status: 0 when every planned sample has a verdict on the candidate, 1 when some have none
    (harness_error, not_run), else pytest's (2 interrupted, 3 internal error, 4 a usage error: a bad file or
    option, said in one line)."""
    import pytest  # the command is a pytest run; the library's import stays free of pytest

    params: dict[str, Any] = {"allow_code_execution": True}
    for key, value in (("k", k), ("limit", limit), ("timeout_s", timeout_s), ("isolation", isolation),
                       ("workers", workers), ("impossible_instruction", impossible_instruction)):
        if value is not None:
            params[key] = value
    here = Path.cwd()
    target: dict[str, Any] = {"mode": "samples", "samples": str((here / os.path.expanduser(samples)).resolve())}
    if allow_subset:
        target["allow_subset"] = True
    if extract:
        target["extract"] = True
    config = {"target": target,
              "dataset": dataset if dataset in NAMES else str((here / os.path.expanduser(dataset)).resolve()),
              "params": params}
    with tempfile.TemporaryDirectory(prefix="humaneval-evaluate-") as folder:
        run = Path(folder)
        (run / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        path = run / "evaluate.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        report = outputs.get("report") or str(run / "report.json")
        args = ["--humaneval-config", str(path), "-c", str(run / "pytest.ini"), "--rootdir", folder,
                "-p", "no:cacheprovider", "--humaneval-report", str((here / report).resolve())]
        for name, option in OUTPUTS[1:]:
            if outputs.get(name):
                args += [option, str((here / os.path.expanduser(str(outputs[name]))).resolve())]
        args += (["-q"] if quiet else []) + pytest_args
        os.chdir(folder)  # pytest loads the conftest.py of the folder it starts in
        try:
            code = int(pytest.main(args))
        finally:
            os.chdir(here)
        if code not in (0, 1):
            return code
        try:
            counts = json.loads(Path(report).read_text(encoding="utf-8"))["counts"]
        except (OSError, ValueError, KeyError):
            return 1 if code else 0
        return 1 if counts.get("harness_error") or counts.get("not_run") else 0
