"""An RL set's ground truth as a problem the judge runs: the tests themselves, carried in the trainer's row
(verl's ``prime_code`` ``ground_truth``: APPS's mapping of ``inputs``, ``outputs`` and ``fn_name``, as a JSON
string; DeepCoder's list of ``{"input", "output", "testtype"}``), where HumanEval's rows carry a task id.

The problem is named by its tests (``truth/`` and 20 hex digits of their SHA-256), so the same ground truth is the
same problem however many rows, steps or processes bring it, and a Verifier keeps each once. No pytest import.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .dataset import Problem
from .io_problems import IOProblem, as_problem, tests_from_ground_truth
from .io_shapes import holds_tests

__all__ = ["PREFIX", "holds_tests", "problem_from_ground_truth"]

PREFIX = "truth/"


def problem_from_ground_truth(value: Any, where: str, func_name: str | None = None) -> Problem:
    """The problem ``value``'s tests make (``func_name``: the row's own, for tests that do not name it); a bad one
    is a ``DatasetError`` naming ``where``."""
    kind, name, tests = tests_from_ground_truth(value, where, func_name=func_name)
    key = json.dumps([kind, name, [[test.input, test.output] for test in tests]], ensure_ascii=False)
    task_id = PREFIX + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    return as_problem(IOProblem(task_id, "", "", kind, name, tests, 0))
