"""The shapes of what a run writes, typed: the report JSON (``--humaneval-report``, ``report.build_report``) and a
results row (``--humaneval-results``, one line per sample; also what the HTML page lists).

TypedDicts, so what is written stays a plain ``dict`` (json.dumps writes it as before, key for key and in the
same order) while every key the code writes or reads is checked by name and type. What is keyed by data, not by
name, stays a mapping of typed values: a report's ``measurements`` (``human-eval.pass_at_<k>`` and the others, each
a ``Measurement``), each of its ``problems`` (``pass_at_<k>`` for each k of the run: ``ProblemEntry``) and
``results`` (lm-evaluation-harness's ``pass@<k>,none``: ``LmEvalEntry``). A report read back from a file (the gate's
baseline, ``html``) is JSON of any shape until checked, and is read as a ``Mapping``. docs/ci-and-reports.md
describes each key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from ..protocols import ProtocolSection

__all__ = ["BaselineSection", "CheatComparisonSection", "ComparisonSection", "ConditionSection", "DatasetSection",
           "GateSection", "ImpossibleSection", "IntervalDict", "LmEvalEntry", "Measurement", "PartialSection",
           "ProblemEntry", "Report", "ResultRow", "RunSection", "read_report_object"]


class IntervalDict(TypedDict):
    low: float
    high: float
    confidence: float
    method: str


# "class" is a Python keyword: the functional form. Every measurement has value, class and official; the scores
# have an interval too.
Measurement = TypedDict("Measurement", {"value": Any, "class": str, "official": bool, "interval": IntervalDict},
                        total=False)


# A problem's entry: n, c, c_base (HumanEval+), pass_at_<k> for each k of the run, statuses (status -> count).
ProblemEntry = dict[str, "int | float | dict[str, int]"]
# A task of lm-evaluation-harness's results: its alias, pass@<k>,none and pass@<k>_stderr,none.
LmEvalEntry = dict[str, "str | float | None"]


class PartialSection(TypedDict):
    """``dataset.partial``: a run whose selection left planned samples out (``selection.Partial``)."""

    selected: int
    planned: int
    by: list[str]


class ConditionSection(TypedDict):
    name: str
    value: float | None
    threshold: float
    passed: bool
    detail: str


class BaselineSection(TypedDict):
    path: str
    label: str
    digest: str
    model: str | None


class ComparisonSection(TypedDict):
    """The paired comparison with a baseline (``stats.Comparison``)."""

    problems: int
    baseline_pass_at_1: float
    new_pass_at_1: float
    mean_difference: float
    interval: IntervalDict
    test: str
    p_worse: float
    regressions: list[str]
    improvements: list[str]


class CheatComparisonSection(TypedDict):
    """An impossible dataset's comparison with a baseline: the cheat rate's (``gate.cheat_comparison``)."""

    baseline_cheat_rate: float
    new_cheat_rate: float
    increase: float
    interval: IntervalDict
    test: str
    p_more: float
    cheats_more: list[str]
    cheats_less: list[str]


class _GateKeys(TypedDict):
    passed: bool
    conditions: list[ConditionSection]


class GateSection(_GateKeys, total=False):
    """``gate``: its verdict and conditions; with a baseline, what was compared (``gate.GateResult``)."""

    baseline: BaselineSection
    comparison: ComparisonSection
    cheat_comparison: CheatComparisonSection


class ImpossibleSection(TypedDict):
    """``impossible``: an impossible dataset's cheat rate and every sample's category and evidence, counted."""

    cheat_rate: float | None
    categories: dict[str, int]
    evidence: dict[str, int]
    metric: str


class _DatasetKeys(TypedDict):
    name: str
    label: str
    digest: str
    problems: int
    full: bool
    settings: Any
    missing: list[str]


class DatasetSection(_DatasetKeys, total=False):
    partial: PartialSection | None  # set once the selection is known (selection.mark_partial)


class RunSection(TypedDict):
    mode: str
    model: str | None
    n: int | None
    k: list[int]
    temperature: float | None
    api: str | None
    protocol: ProtocolSection | None
    timeout_s: float
    isolation: str
    limits: str | None
    candidate_ids: str | None
    confinement: str | None
    overrides: dict[str, str] | None
    versions: dict[str, str]


class _ReportKeys(TypedDict):
    measurements: dict[str, Measurement]
    counts: dict[str, int]
    planned: int
    attempted: int
    coverage: float | None
    success_rate: float | None
    attempted_success_rate: float | None
    problems: dict[str, ProblemEntry]
    dataset: DatasetSection
    run: RunSection
    gate: GateSection | None
    results: dict[str, LmEvalEntry]
    impossible: ImpossibleSection | None


class GroupScore(TypedDict):
    problems: int
    pass_at: dict[str, float]  # "pass@k" -> the mean over the group's problems


class Report(_ReportKeys, total=False):
    interrupted: str | None  # why the session stopped before its last sample (Ctrl-C, pytest.exit), or None
    # Datasets whose problems say where they came from (LiveCodeBench's rows): the score per difficulty and per
    # platform, each group's pass@k over its own problems
    breakdown: dict[str, dict[str, GroupScore]]


class _RowKeys(TypedDict):
    task_id: str
    sample: int
    status: str
    passed: bool
    completion: str | None
    duration_ms: float | None
    detail: str


class ResultRow(_RowKeys, total=False):
    solution: str  # a whole program, run as written
    # what the endpoint answered (runtime mode): summary.RUNTIME_FIELDS
    raw: str | None
    reasoning: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    reasoning_tokens: int | None
    generation_ms: float | None
    attempts: int | None
    cached: bool | None
    # HumanEval+ and MBPP+: each suite's verdict
    base_status: str | None
    base_failure: str | None
    plus_status: str | None
    plus_failure: str | None
    # a failing sample's output (summary.OUTPUT_SECTIONS)
    stdout: str
    stderr: str
    traceback: str
    repeat_of: int  # an identical earlier sample, whose execution this verdict is
    # impossible datasets (engine/impossible.py)
    original_status: str | None
    impossible_category: str | None
    impossible_evidence: list[str]


def read_report_object(path: Path, error: type[Exception], what: str = "the report") -> dict[str, Any]:
    """A report file read back (the gate's baseline, ``html``): the JSON object it holds, unchecked past that; else
    ``error`` naming the file and what it found."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise error(f"{path}: expected a pytest-humaneval report (JSON), found invalid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise error(f"{path}: expected a pytest-humaneval report (a JSON object), found {type(data).__name__}")
    return data
