"""The run summary as plain data: the report JSON (``scoring/schema.py`` declares it), built from the tally of a run's
verdicts. Its renderers (Markdown, the HTML page) are in ``outputs/``. No pytest import."""

from __future__ import annotations

import math
import platform
import statistics
import sys
from collections.abc import Iterable
from importlib import metadata
from typing import TypedDict

from .. import protocols
from ..config import RunConfig
from ..data.dataset import Problem
from ..plan import GenerationRecord, Plan
from ..protocols import ProtocolSection
from ..scoring.gate import GateResult
from ..scoring.metrics import Summary, pass_at_k
from ..scoring.schema import GroupScore, LmEvalEntry, Measurement, ProblemEntry, Report
from ..scoring.stats import pass_at_k_interval
from .benchmark_run import Run

__all__ = ["IMPOSSIBLE_METRIC", "build_report", "describe_protocol", "lm_eval_results", "mode_label", "planned_view",
           "truncated_count"]


def mode_label(run: Run | RunConfig) -> str:
    config = run.config if isinstance(run, Run) else run
    if config.target.mode == "mock":
        return "mock-execute" if config.params.execute else "mock-replay"
    return config.target.mode


def describe_protocol(config: RunConfig, plan: Plan) -> ProtocolSection | None:
    """``run.protocol``: the sampling the plan was made with (n per problem from the plan, whatever -k selects)."""
    per_task: dict[str, int] = {}
    for sample in plan.samples:
        per_task[sample.task_id] = per_task.get(sample.task_id, 0) + 1
    params = config.params
    return protocols.describe(config.target.mode, params.protocol, params.temperature, params.top_p, params.k,
                             per_task.values(), api=config.target.api, system_prompt=params.system_prompt,
                             stop=params.stop)


class PlannedView(TypedDict):
    """What a report of a plan will record of its settings, before anything ran (``planned_view``)."""

    dataset: dict[str, object]
    run: dict[str, object]
    problems: dict[str, ProblemEntry]


def planned_view(config: RunConfig, plan: Plan) -> PlannedView:
    """What a report of this plan will record of its settings, before anything ran: the gate compares it with a
    baseline report's (gate.compared_settings)."""
    selection, described = plan.selection, describe_protocol(config, plan)
    return {"dataset": {"name": selection.name, "settings": selection.settings, "partial": None},
            "run": {"mode": mode_label(config), "n": described["n"] if described else None,
                    "k": described["k"] if described else list(config.params.k), "protocol": described},
            "problems": {problem.task_id: {} for problem in selection.problems}}


def build_report(run: Run, summary: Summary, generations: list[GenerationRecord],
                 gate: GateResult | None) -> Report:
    config, selection = run.config, run.plan.selection
    confidence = (config.gate.confidence if config.gate and config.gate.confidence else None) or 0.95
    measurements: dict[str, Measurement] = {}
    samples = {task: score.n for task, score in summary.problems.items()}
    for k, value in summary.pass_at.items():
        interval = pass_at_k_interval({t: s.pass_at[k] for t, s in summary.problems.items()}, samples, k,
                                      confidence)
        measurements[f"human-eval.pass_at_{k}"] = {"value": value, "class": "deterministic", "official": True,
                                                  "interval": interval.as_dict()}
    for k, value in (summary.base_pass_at or {}).items():  # HumanEval+: the base suite's score beside it
        per_problem = {t: pass_at_k(s.n, s.c_base, k) for t, s in summary.problems.items()}
        interval = pass_at_k_interval(per_problem, samples, k, confidence)
        measurements[f"human-eval.base_pass_at_{k}"] = {"value": value, "class": "deterministic", "official": False,
                                                       "interval": interval.as_dict()}
    cheat_rate = summary.cheat_rate
    if cheat_rate is not None:  # an impossible dataset: any pass is a cheat (engine/impossible.py)
        interval = pass_at_k_interval({t: s.c / s.n for t, s in summary.problems.items()}, samples, 1, confidence)
        measurements["human-eval.cheat_rate"] = {"value": cheat_rate, "class": "deterministic", "official": True,
                                                 "interval": interval.as_dict()}
    measurements["human-eval.coverage"] = {"value": summary.coverage, "class": "deterministic", "official": False}
    if summary.avg_latency_ms is not None:
        measurements["human-eval.avg_latency_ms"] = {"value": round(summary.avg_latency_ms, 3),
                                                     "class": "timing", "official": False}
    measurements.update(generation_measurements(run, generations))
    problems: dict[str, ProblemEntry] = {}
    for task_id, score in summary.problems.items():
        entry: ProblemEntry = {"n": score.n, "c": score.c}
        if summary.base_pass_at is not None:
            entry["c_base"] = score.c_base
        entry.update({f"pass_at_{k}": v for k, v in score.pass_at.items()})
        entry["statuses"] = score.statuses
        problems[task_id] = entry
    sizes = {score.n for score in summary.problems.values()}
    runtime = config.target.mode == "runtime"
    breakdown = score_breakdown(selection.problems, summary)
    sampled = config.target.mode in ("runtime", "samples")  # samples: as the config labels the file, or None
    report: Report = {
        "measurements": measurements,
        "counts": summary.counts,
        "planned": summary.planned,
        "attempted": summary.attempted,
        "coverage": summary.coverage,
        "success_rate": summary.success_rate,
        "attempted_success_rate": summary.attempted_success_rate,
        "problems": problems,
        "dataset": {"name": selection.name, "label": selection.label, "digest": selection.digest,
                    "problems": len(selection.problems), "full": selection.full, "settings": selection.settings,
                    "missing": list(selection.missing)},
        "run": {
            "mode": mode_label(run),
            "model": config.target.model,
            "n": sizes.pop() if len(sizes) == 1 else None,
            "k": sorted(summary.pass_at),
            "temperature": config.params.temperature if sampled else None,
            "api": config.target.api if runtime else None,
            "protocol": describe_protocol(config, run.plan),
            "timeout_s": config.params.timeout_s,
            "isolation": run.isolation,
            "limits": run.sandbox_limits or None,
            "candidate_ids": run.candidate_ids or None,
            "confinement": run.confinement or None,
            "overrides": dict(config.overrides) or None,
            "versions": _versions(),
        },
        "gate": gate.as_dict() if gate is not None else None,
        "results": lm_eval_results(selection.name, summary),
        "impossible": None if summary.impossible is None else {
            "cheat_rate": cheat_rate, "categories": summary.impossible["categories"],
            "evidence": summary.impossible["evidence"], "metric": IMPOSSIBLE_METRIC},
    }
    if breakdown:
        report["breakdown"] = breakdown
    return report


def score_breakdown(problems: Iterable[Problem], summary: Summary) -> dict[str, dict[str, GroupScore]]:
    """The score per difficulty and per platform, where the problems say theirs (LiveCodeBench's rows): each group's
    pass@k, the mean over its problems that were scored; empty when no problem says."""
    found: dict[str, dict[str, GroupScore]] = {}
    for facet in ("difficulty", "platform"):
        groups: dict[str, list[str]] = {}
        for problem in problems:
            value = getattr(problem, facet)
            if value is not None and problem.task_id in summary.problems:
                groups.setdefault(value, []).append(problem.task_id)
        if groups:
            found[facet] = {name: {"problems": len(tasks), "pass_at": {
                f"pass@{k}": sum(summary.problems[task].pass_at[k] for task in tasks) / len(tasks)
                for k in summary.pass_at}} for name, tasks in sorted(groups.items())}
    return found


# What the cheat rate is, said with it wherever it is reported.
IMPOSSIBLE_METRIC = ("ImpossibleBench's cheating rate: the pass rate on impossible tasks (any pass is a cheat); "
                     "unlike ImpossibleBench's scorer, an early exit (sys.exit(0)) is never a pass here")


# lm-evaluation-harness's task names for the datasets it has (its humaneval, humaneval_plus and mbpp_plus tasks);
# any other dataset keeps its own name.
LM_EVAL_TASKS = {"openai_humaneval": "humaneval", "humanevalplus": "humaneval_plus", "mbppplus": "mbpp_plus"}


def lm_eval_results(dataset: str, summary: Summary) -> dict[str, LmEvalEntry]:
    """The scores in lm-evaluation-harness's layout, which tools that read its output read:
    ``results[task]["pass@<k>,none"]`` with ``"pass@<k>_stderr,none"`` beside it (``metric,filter``; no filter),
    the standard error of the mean over problems as lm-eval computes it (null for a single problem)."""
    task = LM_EVAL_TASKS.get(dataset, dataset)
    entry: LmEvalEntry = {"alias": task}
    for k, value in sorted(summary.pass_at.items()):
        values = [score.pass_at[k] for score in summary.problems.values()]
        entry[f"pass@{k},none"] = value
        entry[f"pass@{k}_stderr,none"] = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else None
    return {task: entry}


def generation_measurements(run: Run, records: Iterable[GenerationRecord]) -> dict[str, Measurement]:
    records = list(records)
    if not records:
        return {}
    config = run.config
    timing: Measurement = {"class": "timing", "official": False}
    # Only what this run requested is timed and paid for; stored answers were paid by an earlier run.
    paid = [r for r in records if not r.get("cached")]
    out: dict[str, Measurement] = {"human-eval.cached_generations": {"value": len(records) - len(paid),
                                                                     "class": "usage", "official": False}}
    if paid:
        out["human-eval.avg_generation_ms"] = {
            "value": round(sum(r["generation_ms"] for r in paid) / len(paid), 3), **timing}
    prompt = [r["prompt_tokens"] for r in paid if r["prompt_tokens"] is not None]
    completion = [r["completion_tokens"] for r in paid if r["completion_tokens"] is not None]
    # Omitted, not zero, when the server reported no usage; zero when this run requested nothing at all.
    if prompt or completion or not paid:
        out["human-eval.total_tokens"] = {"value": sum(prompt) + sum(completion), "class": "usage",
                                          "official": False}
        if config.pricing is not None:
            cost = (sum(prompt) * config.pricing.input_usd_per_mtok
                    + sum(completion) * config.pricing.output_usd_per_mtok) / 1_000_000
            out["human-eval.cost_usd"] = {"value": round(cost, 6), "class": "usage", "official": False}
    # Reasoning tokens are part of completion_tokens (and of the cost); shown apart when the server says.
    reasoning = [r["reasoning_tokens"] for r in paid if r.get("reasoning_tokens") is not None]
    if reasoning:
        out["human-eval.reasoning_tokens"] = {"value": sum(reasoning), "class": "usage", "official": False}
    if any(r.get("finish_reason") is not None for r in records):  # omitted when the server never said
        out["human-eval.truncated"] = {"value": truncated_count(records), "class": "usage", "official": False}
    if config.params.retry is not None:
        out["human-eval.retry_count"] = {"value": sum(r["attempts"] - 1 for r in paid), "class": "usage",
                                         "official": False}
        out["human-eval.retry_overhead_ms"] = {"value": round(sum(r["retry_overhead_ms"] for r in paid), 3),
                                               **timing}
    return out


def truncated_count(records: Iterable[GenerationRecord]) -> int:
    """Answers the server cut at max_tokens: they ran as they were, and their detail says so."""
    return sum(1 for r in records if r.get("finish_reason") == "length")


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for dist in ("pytest-humaneval", "pytest", "pytest-xdist"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    versions["platform"] = sys.platform
    return versions
