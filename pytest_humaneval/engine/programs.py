"""The rules of one sample, whoever asks (the pytest items, ``Verifier``): which code it brings, and which program
the sandbox runs for it. No pytest import."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import sandbox
from ..completions.sources import code_of_row
from ..config import PlusParams
from ..data import plus
from ..data.dataset import Problem
from ..data.io_problems import ENVIRONMENT, call_shim

__all__ = ["code_of_row", "expected_cost", "program_for"]


def program_for(problem: Problem, completion: str, solution: str | None, suites: Mapping[str, bytes],
                plus_params: PlusParams | None) -> sandbox.Program:
    """What the sandbox runs for a sample of ``problem``: ``prompt + completion``, or ``solution`` as written (a
    whole program); judged by the dataset's test, or by EvalPlus's suites and rules when the dataset has them
    (``suites``: a ``plus.Suites`` of the dataset, empty for HumanEval)."""
    if problem.io is not None:  # a program that reads standard input: each test a candidate of its own
        return sandbox.Program("", completion if solution is None else solution, problem.test, "", None, True,
                               io=problem.io, io_tests=problem.io_tests, preamble=ENVIRONMENT)
    if problem.call is not None:  # a functional problem: the judge calls the program's method or function
        return sandbox.Program("", (completion if solution is None else solution) + call_shim(problem.call),
                               problem.test, problem.entry_point, None, True, io_tests=problem.io_tests,
                               preamble=ENVIRONMENT)
    suite = None
    if problem.evalplus and isinstance(suites, plus.Suites):
        limits = plus_params or PlusParams()
        suite = sandbox.Suite(str(suites.path(problem.task_id)), plus.BLOB_OFFSET, limits.min_time_limit_s,
                              limits.time_limit_factor, plus.oracle(problem))
    if solution is not None:
        return sandbox.Program(problem.prompt, solution, problem.test, problem.entry_point, suite, True)
    return sandbox.Program(problem.prompt, completion, problem.test, problem.entry_point, suite)


def expected_cost(problem: Problem, suites: Mapping[str, Any]) -> float:
    """What a sample of ``problem`` is expected to cost: on EvalPlus suites the canonical solution's time on them
    here (a sample that passes spends about that); 0.0 when unknown (a HumanEval test)."""
    return suites.cost(problem.task_id) if problem.evalplus and isinstance(suites, plus.Suites) else 0.0
