"""The shapes of what a run writes, typed: the report JSON (``--humaneval-report``, ``report.build_report``) and a
results row (``--humaneval-results``, one line per sample; also what the HTML page lists).

TypedDicts, so what is written stays a plain ``dict`` (json.dumps writes it as before, key for key and in the
same order) while every key the code writes or reads is checked by name and type. What is keyed by data, not by
name, stays a mapping: a report's ``measurements`` (``human-eval.pass_at_<k>`` and the others, each a
``Measurement``), its ``problems`` (``pass_at_<k>`` for each k of the run) and ``results`` (lm-evaluation-harness's
``pass@<k>,none``). A report read back from a file (the gate's baseline, ``html``) is JSON of any shape until
checked, and is read as a ``Mapping``. docs/ci-and-reports.md describes each key.
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["DatasetSection", "IntervalDict", "Measurement", "Report", "ResultRow", "RunSection"]


class IntervalDict(TypedDict):
    low: float
    high: float
    confidence: float
    method: str


# "class" is a Python keyword: the functional form. Every measurement has value, class and official; the scores
# have an interval too.
Measurement = TypedDict("Measurement", {"value": Any, "class": str, "official": bool, "interval": IntervalDict},
                        total=False)


class _DatasetKeys(TypedDict):
    name: str
    label: str
    digest: str
    problems: int
    full: bool
    settings: Any
    missing: list[str]


class DatasetSection(_DatasetKeys, total=False):
    partial: dict[str, Any] | None  # set once the selection is known (selection.mark_partial)


class RunSection(TypedDict):
    mode: str
    model: str | None
    n: int | None
    k: list[int]
    temperature: float | None
    api: str | None
    protocol: dict[str, Any] | None
    timeout_s: float
    isolation: str
    limits: str | None
    candidate_ids: str | None
    confinement: str | None
    overrides: dict[str, Any] | None
    versions: dict[str, str]


class _ReportKeys(TypedDict):
    measurements: dict[str, Measurement]
    counts: dict[str, int]
    planned: int
    attempted: int
    coverage: float | None
    success_rate: float | None
    attempted_success_rate: float | None
    problems: dict[str, dict[str, Any]]  # n, c, c_base (HumanEval+), pass_at_<k> for each k, statuses
    dataset: DatasetSection
    run: RunSection
    gate: dict[str, Any] | None
    results: dict[str, dict[str, Any]]
    impossible: dict[str, Any] | None


class Report(_ReportKeys, total=False):
    interrupted: str | None  # why the session stopped before its last sample (Ctrl-C, pytest.exit), or None


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
