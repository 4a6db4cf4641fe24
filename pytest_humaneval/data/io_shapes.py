"""Which rows are standard-input and functional problems (issue 52), and the one line the HumanEval loader says
about a file of them. A leaf of its own because ``dataset.py`` asks it about a file's first row while
``io_problems.py``, which holds the readers (and re-exports these), imports ``dataset.py``'s: one module would make
an import cycle. No pytest import; the standard library only."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["CODECONTESTS_GROUPS", "SHAPE_NAMES", "holds_tests", "io_shape", "not_judged_yet"]

SHAPE_NAMES = {"livecodebench": "LiveCodeBench", "apps": "APPS/TACO", "codecontests": "CodeContests",
               "deepcoder": "DeepCoder", "verl": "verl prime_code"}
CODECONTESTS_GROUPS = ("public_tests", "private_tests", "generated_tests")
DOCS = "docs/datasets.md#standard-input-and-functional-problems"


def not_judged_yet(where: str, shape: str) -> str:
    """What the HumanEval loader (``dataset.load_dataset``) says of a file of these rows: the fronts then read it
    with ``io_problems.load_io_dataset`` (the loader's error is ``IORowsFound``); a caller that does not is told."""
    return (f"{where}: expected HumanEval or EvalPlus rows, found {SHAPE_NAMES[shape]} rows (standard-input and "
            f"functional problems), which pytest_humaneval.data.io_problems.load_io_dataset reads; see {DOCS}")


def io_shape(row: Any) -> str | None:
    """The shape of ``row`` (a key of :data:`SHAPE_NAMES`), or None: not a row of these problems. A row with
    HumanEval's ``entry_point`` is never one (HumanEval and EvalPlus files keep loading whatever else they hold)."""
    if not isinstance(row, Mapping) or "entry_point" in row:
        return None
    if "question_id" in row and ("public_test_cases" in row or "private_test_cases" in row):
        return "livecodebench"
    if "input_output" in row:
        return "apps"
    if "name" in row and any(group in row for group in CODECONTESTS_GROUPS):
        return "codecontests"
    if "tests" in row and "problem" in row:
        return "deepcoder"
    reward = row.get("reward_model")
    if isinstance(reward, Mapping) and "ground_truth" in reward and holds_tests(reward["ground_truth"]):
        return "verl"
    return None


def holds_tests(value: Any) -> bool:
    """Whether ``value`` (or the JSON text it is) holds input/output tests, as an RL set's ground truth may (a math
    answer, a task id does not): a mapping with ``inputs`` and ``outputs``, or a list of objects with ``input`` and
    ``output``."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        if value.lstrip()[:1] not in ("{", "["):
            return False
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # (RecursionError: nested past the parser's depth)
            return False
    if isinstance(value, Mapping):  # (a mapping that names its task is that task's, whatever else it holds)
        return "inputs" in value and "outputs" in value and "task_id" not in value
    return isinstance(value, list) and bool(value) and all(
        isinstance(case, Mapping) and "input" in case and "output" in case for case in value)
