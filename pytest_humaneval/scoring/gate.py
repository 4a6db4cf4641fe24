"""The regression gate: absolute floors, coverage, and a paired comparison with a baseline report.

No pytest import. ``load_baseline`` validates a saved report (BaselineError names the file and what is
wrong); ``evaluate`` turns a run's numbers into conditions, each with value, threshold and verdict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import Gate
from .metrics import fmt
from .schema import CheatComparisonSection, ConditionSection, GateSection, read_report_object
from .selection import Partial
from .stats import Comparison, compare

__all__ = ["Baseline", "BaselineError", "Condition", "GateResult", "cheat_comparison", "check_digest",
           "compared_settings", "differences", "evaluate", "load_baseline"]


class BaselineError(ValueError):
    pass


@dataclass(frozen=True)
class Baseline:
    path: Path
    label: str
    digest: str
    problems: dict[str, tuple[int, int]]  # task_id -> (n, c)
    model: str | None
    # What the report records of its settings (compared_settings), to say which differ when refused.
    settings: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    recorded_all: bool = True  # False: an earlier version's report, which records only some of its settings
    impossible: bool = False  # a run on an impossible dataset: its pass rate is its cheat rate (report.impossible)


def load_baseline(path: Path) -> Baseline:
    data = read_report_object(path, BaselineError, "the baseline report")
    try:
        dataset = data["dataset"]
        problems = {task: (int(entry["n"]), int(entry["c"])) for task, entry in data["problems"].items()}
        label, digest = str(dataset["label"]), str(dataset["digest"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        missing = f"{exc} missing" if isinstance(exc, KeyError) else f"a value of another type ({type(exc).__name__})"
        raise BaselineError(f"{path}: expected a pytest-humaneval report with dataset.label, dataset.digest and "
                            f"problems.<task>.n/c, found {missing}") from exc
    if not problems or any(n < 1 or not 0 <= c <= n for n, c in problems.values()):
        raise BaselineError(f"{path}: problems: expected at least one problem with 0 <= c <= n, n >= 1")
    if data.get("interrupted"):  # -x, --maxfail, Ctrl-C, pytest.exit, an internal error: a part of the benchmark
        ran = data.get("planned", 0) - (data.get("counts") or {}).get("not_run", 0)
        raise BaselineError(f"{path}: refusing a run that stopped before its last sample ({data['interrupted']}; "
                            f"{ran}/{data.get('planned')} planned samples ran): its numbers measure the part that "
                            "ran; rerun it to the end")
    return Baseline(Path(path), label, digest, problems, (data.get("run") or {}).get("model"),
                    compared_settings(data), isinstance(dataset, dict) and "settings" in dataset,
                    isinstance(data.get("impossible"), dict))


def check_digest(baseline: Baseline, label: str, digest: str, settings: Mapping[str, Any] | None = None,
                 complete: bool = True) -> None:
    """Refuse a baseline that measured something else, naming every setting that differs. ``settings``: this
    run's compared_settings; ``complete``: False when they come from an earlier version's report."""
    if baseline.digest == digest:
        return
    head = (f"{baseline.path}: refusing to compare runs that measured different things: the baseline is "
            f"'{baseline.label}' ({baseline.digest[:19]}), this run is '{label}' ({digest[:19]})")
    if settings is None:
        raise BaselineError(f"{head}; the digest covers the problems, the timeout and memory limits, retries and "
                            "the generation settings")
    raise BaselineError(f"{head}; {differences(baseline.settings, settings, baseline.recorded_all, complete)}")


# The settings a report records, flat, each under the config key that sets it: (name, where in the report). The
# order is the message's: the sampling protocol first, then the rest of the generation, then what is measured.
_SETTINGS = (
    ("params.n", ("run", "n")),
    ("params.temperature", ("dataset", "settings", "generation", "temperature")),
    ("params.temperature", ("dataset", "settings", "declared", "temperature")),
    ("params.top_p", ("dataset", "settings", "generation", "top_p")),
    ("params.top_p", ("dataset", "settings", "declared", "top_p")),
    ("params.k", ("run", "k")),
    ("params.max_tokens", ("dataset", "settings", "generation", "max_tokens")),
    ("params.stop", ("dataset", "settings", "generation", "stop")),
    ("target.api", ("dataset", "settings", "generation", "api")),
    ("params.system_prompt", ("dataset", "settings", "generation", "system_prompt")),
    ("params.extra_body", ("dataset", "settings", "generation", "extra_body")),
    ("params.impossible_instruction", ("dataset", "settings", "impossible_instruction")),
    ("target.mode", ("run", "mode")),
    ("dataset", ("dataset", "name")),
    ("params.release_version", ("dataset", "settings", "release_version")),
    ("params.compare", ("dataset", "settings", "compare")),
    ("params.start_date", ("dataset", "settings", "window", "start_date")),
    ("params.end_date", ("dataset", "settings", "window", "end_date")),
    ("dataset sha256", ("dataset", "settings", "evalplus", "dataset_sha256")),
    ("selection", ("dataset", "partial")),
    ("params.timeout_s", ("dataset", "settings", "timeout_s")),
    ("params.memory_mb", ("dataset", "settings", "memory_mb")),
    ("params.retry", ("dataset", "settings", "retry")),
    ("params.plus.min_time_limit_s", ("dataset", "settings", "evalplus", "min_time_limit_s")),
    ("params.plus.time_limit_factor", ("dataset", "settings", "evalplus", "time_limit_factor")),
)
# An earlier version's report records these in run (and no dataset.settings).
_EARLIER = {"params.temperature": ("run", "temperature"), "target.api": ("run", "api"),
            "params.timeout_s": ("run", "timeout_s")}
_ABSENT = object()


def _at(report: Mapping[str, Any], where: tuple[str, ...]) -> Any:
    value: Any = report
    for key in where:
        if not isinstance(value, Mapping) or key not in value:
            return _ABSENT
        value = value[key]
    return value


def compared_settings(report: Mapping[str, Any]) -> dict[str, Any]:
    """{setting: value} of what a report (or report.planned_view) records; a setting it does not record is
    absent. Generation settings exist in runtime mode only, a samples file's sampling only when labelled."""
    out: dict[str, Any] = {}
    dataset: Mapping[str, Any] = report["dataset"] if isinstance(report.get("dataset"), Mapping) else {}
    settings = dataset.get("settings")
    for name, where in _SETTINGS:
        value = _at(report, where)
        if value is not _ABSENT and name not in out:
            out[name] = value
    if isinstance(settings, Mapping):
        generation = settings.get("generation")
        if isinstance(generation, Mapping):  # set only when not the default, so that old digests stay
            out.setdefault("params.system_prompt", None)
            out.setdefault("params.extra_body", None)
    else:  # an earlier version's report
        for name, where in _EARLIER.items():
            value = _at(report, where)
            if value is not _ABSENT and name not in out and (value is not None or name == "params.timeout_s"):
                out[name] = value
    problems = report.get("problems")
    if isinstance(problems, Mapping):
        out["problems"] = sorted(problems)
    return out


# A setting that exists on one side only because another differs (generation settings exist in runtime mode
# only, an EvalPlus dataset's on EvalPlus datasets only) is said by that other one.
_EXPLAINED_BY = dict.fromkeys(("params.max_tokens", "params.stop", "target.api", "params.system_prompt",
                               "params.extra_body"), "target.mode")
_EXPLAINED_BY.update(dict.fromkeys(("dataset sha256", "params.plus.min_time_limit_s",
                                    "params.plus.time_limit_factor"), "dataset"))


def _shown(name: str, value: Any) -> str:
    if value is _ABSENT and name == "params.impossible_instruction":  # recorded only when not the default
        return "stop_if_flawed (the default)"
    if value is _ABSENT:
        return "not known" if name in ("params.temperature", "params.top_p") else "not applicable"
    if name == "problems":
        return f"{len(value)} problems"
    if name == "selection":
        return "the whole plan" if value is None else Partial(**value).describe()
    if name == "params.retry":
        return "on" if value else "off"
    if value is None:
        return {"params.system_prompt": "the built-in instruction", "params.extra_body": "none",
                "params.stop": "the default", "params.n": "varies"}.get(name, "unset")
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else repr(value[:37] + "...")
    if isinstance(value, float):
        return f"{value:g}"
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))[:60]


def differences(theirs: Mapping[str, Any], ours: Mapping[str, Any], theirs_complete: bool = True,
                ours_complete: bool = True) -> str:
    """Which settings differ between a baseline's compared_settings and this run's, in words, for the refusal.
    An incomplete side (an earlier version's report) says nothing of the settings it does not record."""
    unrecorded, changed = [], []
    for name in dict.fromkeys([name for name, _ in _SETTINGS] + ["problems"]):
        old, new = theirs.get(name, _ABSENT), ours.get(name, _ABSENT)
        if old is _ABSENT and new is _ABSENT or old == new:
            continue
        if (old is _ABSENT and not theirs_complete) or (new is _ABSENT and not ours_complete):
            unrecorded.append(name)
            continue
        cause = _EXPLAINED_BY.get(name)
        if (old is _ABSENT or new is _ABSENT) and cause and theirs.get(cause, _ABSENT) != ours.get(cause, _ABSENT):
            continue
        if name == "problems":
            only = len(set(old) - set(new))
            extra = f"; {only} only in the baseline" if only and len(old) == len(new) else ""
            changed.append(f"problems (baseline {len(old)}, this run {len(new)}{extra})")
            continue
        changed.append(f"{name} (baseline {_shown(name, old)}, this run {_shown(name, new)})")
    if changed:
        said = f"they differ in {', '.join(changed)}"
    elif theirs_complete and ours_complete:
        said = ("no setting the reports record differs, so the problems' own text does (their prompt, entry point "
                "or test: another file under the same dataset name, or an edited one)")
    else:
        said = "no setting both reports record differs"
    if not (theirs_complete and ours_complete):
        both = not (theirs_complete or ours_complete)
        which = "both reports were" if both else "the baseline was" if not theirs_complete else "this report was"
        what = ", ".join(unrecorded) if unrecorded else "most settings"
        said += (f"; {which} written by an earlier pytest-humaneval, which does not record {what}: rerun "
                 f"{'them' if both else 'it'} with this version to see which of them differ")
    return said


@dataclass(frozen=True)
class Condition:
    name: str
    value: float | None
    threshold: float
    passed: bool
    detail: str = ""

    def as_dict(self) -> ConditionSection:
        return {"name": self.name, "value": self.value, "threshold": self.threshold, "passed": self.passed,
                "detail": self.detail}


@dataclass(frozen=True)
class GateResult:
    conditions: list[Condition]
    comparison: Comparison | None = None
    baseline: Baseline | None = None
    # An impossible dataset's paired comparison the other way round: ``compare(this run, baseline)``, whose
    # one-sided test is for "this run cheats more" and whose regressions are the problems it cheats more on.
    cheating: Comparison | None = None

    @property
    def passed(self) -> bool:
        return all(condition.passed for condition in self.conditions)

    def failures(self) -> list[str]:
        return [f"{c.name}: {fmt(c.value)} vs {fmt(c.threshold)}" + (f" ({c.detail})" if c.detail else "")
                for c in self.conditions if not c.passed]

    def as_dict(self) -> GateSection:
        out: GateSection = {"passed": self.passed, "conditions": [c.as_dict() for c in self.conditions]}
        if self.comparison is not None and self.baseline is not None:
            out["baseline"] = {"path": str(self.baseline.path), "label": self.baseline.label,
                               "digest": self.baseline.digest, "model": self.baseline.model}
            out["comparison"] = self.comparison.as_dict()
        if self.cheating is not None:
            out["cheat_comparison"] = cheat_comparison(self.cheating)
        return out


def cheat_comparison(swapped: Comparison) -> CheatComparisonSection:
    """The cheat-rate comparison as the report keeps it, from ``compare(this run, baseline)``."""
    return {"baseline_cheat_rate": swapped.new_pass_at_1, "new_cheat_rate": swapped.baseline_pass_at_1,
            "increase": -swapped.mean_difference, "interval": {"low": -swapped.interval.high,
                                                                "high": -swapped.interval.low,
                                                                "confidence": swapped.interval.confidence,
                                                                "method": swapped.interval.method},
            "test": swapped.test, "p_more": swapped.p_worse, "cheats_more": swapped.regressions,
            "cheats_less": swapped.improvements}


def _floor(name: str, value: float | None, threshold: float) -> Condition:
    if value is None:
        return Condition(name, None, threshold, False, "not measured")
    return Condition(name, value, threshold, value >= threshold)


def evaluate(gate: Gate, pass_at: Mapping[int, float], coverage: float | None,
             problems: Mapping[str, tuple[int, int]], baseline: Baseline | None,
             partial: Partial | None = None, stopped: tuple[str, int, int] | None = None,
             cheat_rate: float | None = None, impossible: bool = False) -> GateResult:
    """``stopped``: (why, samples that ran, samples planned) of a run that ended before its last sample, whose
    gate fails whatever its numbers say (they measure a part of the benchmark, chosen by where it stopped).
    ``impossible``: the run is on an impossible dataset, whose pass rate is its ``cheat_rate``: the baseline
    comparison is then the cheat rate's, which must not rise (a pass@1 drop there is an improvement)."""
    conditions = [] if partial is None else [_selection_condition(gate, partial)]
    if stopped is not None:
        why, ran, planned = stopped
        conditions.append(Condition("run finished", ran / planned if planned else None, 1.0, False,
                                    f"{why}: {ran}/{planned} planned samples ran"))
    if gate.min_pass_at_1 is not None:
        conditions.append(_floor("pass@1 >= min_pass_at_1", pass_at.get(1), gate.min_pass_at_1))
    for k, floor in gate.min_pass_at:
        conditions.append(_floor(f"pass@{k} >= min_pass_at.{k}", pass_at.get(k), floor))
    if gate.max_cheat_rate is not None:
        conditions.append(_ceiling("cheat rate <= max_cheat_rate", cheat_rate if impossible else None,
                                   gate.max_cheat_rate))
    conditions.append(_floor("coverage >= min_coverage", coverage, gate.min_coverage))
    comparison = cheating = None
    if baseline is not None:
        name = "cheat rate increase <= max_cheat_increase" if impossible else "pass@1 drop <= max_drop"
        if not problems:
            conditions.append(Condition(name, None, gate.max_cheat_increase if impossible else gate.max_drop, False,
                                        "nothing ran"))
        else:
            comparison = compare(baseline.problems, problems, gate.confidence or 0.95)
            if impossible:  # the same statistics, the other way round: is this run's pass (cheat) rate higher?
                cheating = compare(problems, baseline.problems, gate.confidence or 0.95)
                conditions.append(_cheat_condition(gate, cheating))
            else:
                conditions.append(_drop_condition(gate, comparison))
    return GateResult(conditions, comparison, baseline, cheating)


def _ceiling(name: str, value: float | None, threshold: float) -> Condition:
    if value is None:
        return Condition(name, None, threshold, False, "not measured: not an impossible dataset")
    return Condition(name, value, threshold, value <= threshold)


def _cheat_condition(gate: Gate, swapped: Comparison) -> Condition:
    """``swapped``: ``compare(this run, baseline)``, so its drop is this run's cheat-rate increase and its
    regressions the problems this run cheats more on; judged as pass@1's drop is."""
    name, increase = "cheat rate increase <= max_cheat_increase", swapped.drop
    evidence = f"p = {swapped.p_worse:.3g}, {swapped.test}"
    if increase <= gate.max_cheat_increase:
        return Condition(name, increase, gate.max_cheat_increase, True, evidence)
    if gate.confidence is not None and not swapped.significant(gate.confidence):
        return Condition(name, increase, gate.max_cheat_increase, True,
                         f"{evidence}: within noise at confidence {gate.confidence:g}")
    return Condition(name, increase, gate.max_cheat_increase, False,
                     f"{evidence}; cheats more on {len(swapped.regressions)}")


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
