"""The regression gate: absolute floors, coverage, and a paired comparison with a baseline report.

No pytest import. ``load_baseline`` validates a saved report (BaselineError names the file and what is
wrong); ``evaluate`` turns a run's numbers into conditions, each with value, threshold and verdict.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .config import Gate
from .metrics import fmt
from .selection import Partial
from .stats import Comparison, compare

__all__ = ["Baseline", "BaselineError", "Condition", "GateResult", "check_digest", "evaluate", "load_baseline"]


class BaselineError(ValueError):
    pass


@dataclass(frozen=True)
class Baseline:
    path: Path
    label: str
    digest: str
    problems: dict[str, tuple[int, int]]  # task_id -> (n, c)
    model: str | None


def load_baseline(path: Path) -> Baseline:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the baseline report: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise BaselineError(f"{path}: expected a pytest-humaneval report (JSON), found invalid JSON: {exc}") from exc
    try:
        dataset = data["dataset"]
        problems = {task: (int(entry["n"]), int(entry["c"])) for task, entry in data["problems"].items()}
        label, digest = str(dataset["label"]), str(dataset["digest"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BaselineError(f"{path}: expected a pytest-humaneval report with dataset.label, dataset.digest and "
                            f"problems.<task>.n/c, found it missing {exc}") from exc
    if not problems or any(n < 1 or not 0 <= c <= n for n, c in problems.values()):
        raise BaselineError(f"{path}: problems: expected at least one problem with 0 <= c <= n, n >= 1")
    return Baseline(Path(path), label, digest, problems, (data.get("run") or {}).get("model"))


def check_digest(baseline: Baseline, label: str, digest: str) -> None:
    if baseline.digest != digest:
        raise BaselineError(
            f"{baseline.path}: refusing to compare runs that measured different things: the baseline is "
            f"'{baseline.label}' ({baseline.digest[:19]}), this run is '{label}' ({digest[:19]}); the digest "
            "covers the problems, the timeout and memory limits, retries and the generation settings")


@dataclass(frozen=True)
class Condition:
    name: str
    value: float | None
    threshold: float
    passed: bool
    detail: str = ""

    def as_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "threshold": self.threshold, "passed": self.passed,
                "detail": self.detail}


@dataclass(frozen=True)
class GateResult:
    conditions: list[Condition]
    comparison: Comparison | None = None
    baseline: Baseline | None = None

    @property
    def passed(self) -> bool:
        return all(condition.passed for condition in self.conditions)

    def failures(self) -> list[str]:
        return [f"{c.name}: {fmt(c.value)} vs {fmt(c.threshold)}" + (f" ({c.detail})" if c.detail else "")
                for c in self.conditions if not c.passed]

    def as_dict(self) -> dict:
        out: dict[str, Any] = {"passed": self.passed, "conditions": [c.as_dict() for c in self.conditions]}
        if self.comparison is not None and self.baseline is not None:
            out["baseline"] = {"path": str(self.baseline.path), "label": self.baseline.label,
                               "digest": self.baseline.digest, "model": self.baseline.model}
            out["comparison"] = self.comparison.as_dict()
        return out


def _floor(name: str, value: float | None, threshold: float) -> Condition:
    if value is None:
        return Condition(name, None, threshold, False, "not measured")
    return Condition(name, value, threshold, value >= threshold)


def evaluate(gate: Gate, pass_at: Mapping[int, float], coverage: float | None,
             problems: Mapping[str, tuple[int, int]], baseline: Baseline | None,
             partial: Partial | None = None) -> GateResult:
    conditions = [] if partial is None else [_selection_condition(gate, partial)]
    if gate.min_pass_at_1 is not None:
        conditions.append(_floor("pass@1 >= min_pass_at_1", pass_at.get(1), gate.min_pass_at_1))
    for k, floor in gate.min_pass_at:
        conditions.append(_floor(f"pass@{k} >= min_pass_at.{k}", pass_at.get(k), floor))
    conditions.append(_floor("coverage >= min_coverage", coverage, gate.min_coverage))
    comparison = None
    if baseline is not None:
        if not problems:
            conditions.append(Condition("pass@1 drop <= max_drop", None, gate.max_drop, False, "nothing ran"))
        else:
            comparison = compare(baseline.problems, problems, gate.confidence or 0.95)
            conditions.append(_drop_condition(gate, comparison))
    return GateResult(conditions, comparison, baseline)


def _selection_condition(gate: Gate, partial: Partial) -> Condition:
    """A partial run is not the benchmark the gate was set for: it fails unless the user opted in."""
    why = partial.describe()
    detail = (f"{why}; allowed by gate.allow_partial" if gate.allow_partial else
              f"{why}; gate.allow_partial: true or --humaneval-allow-partial gates a subset")
    return Condition("whole plan selected", partial.selected / partial.planned, 1.0, gate.allow_partial, detail)


def _drop_condition(gate: Gate, comparison: Comparison) -> Condition:
    drop = comparison.drop
    evidence = f"p = {comparison.p_worse:.3g}, {comparison.test}"
    if drop <= gate.max_drop:
        return Condition("pass@1 drop <= max_drop", drop, gate.max_drop, True, evidence)
    if gate.confidence is not None and not comparison.significant(gate.confidence):
        return Condition("pass@1 drop <= max_drop", drop, gate.max_drop, True,
                         f"{evidence}: within noise at confidence {gate.confidence:g}")
    return Condition("pass@1 drop <= max_drop", drop, gate.max_drop, False,
                     f"{evidence}; {len(comparison.regressions)} regressed")
