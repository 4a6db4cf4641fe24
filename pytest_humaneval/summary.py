"""Controller-side aggregation: results JSONL as results arrive, the report JSON, the terminal section.

Registered as a plugin on the controller only (or the lone process without xdist). It keys everything by
(task_id, sample) and does O(1) work per report, so a 32,800-item run aggregates in linear time.
"""

from __future__ import annotations

import json
import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import IO, Any

import pytest

from .items import PROP, Run, parse_item_name
from .sources import Sample
from .metrics import STATUSES, Outcome, Summary, summarize

__all__ = ["Aggregator"]

SLOWEST = 10
FAILING_SHOWN = 15
RUNTIME_FIELDS = ("raw", "prompt_tokens", "completion_tokens", "generation_ms", "attempts")


class Aggregator:
    def __init__(self, run: Run, results_path: str | None, report_path: str | None) -> None:
        self.results_path = Path(results_path) if results_path else None
        self.report_path = Path(report_path) if report_path else None
        self.use(run)
        self.planned: list[tuple[str, int]] | None = None
        self.outcomes: dict[tuple[str, int], Outcome] = {}
        self.details: dict[tuple[str, int], str] = {}
        self.summary: Summary | None = None
        self._results: IO[str] | None = None

    def use(self, run: Run) -> None:
        """The run whose samples are reported (runtime mode: replaced once completions are generated)."""
        self.run = run
        self.samples = {sample.key: sample for sample in run.plan.samples}
        self.positions = {sample.key: i for i, sample in enumerate(run.plan.samples)}

    # -- what is planned: the collected items after deselection (-k, --lf), wherever they were collected
    def set_planned(self, names: list[str]) -> None:
        if self.planned is not None:
            return
        keys = [parse_item_name(name) for name in names]
        self.planned = [key for key in keys if key is not None and key in self.samples]

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        from .items import HumanEvalItem

        self.set_planned([item.name for item in items if isinstance(item, HumanEvalItem)])

    # -- results as they arrive
    def pytest_sessionstart(self) -> None:
        if self.results_path is not None:
            self.results_path.parent.mkdir(parents=True, exist_ok=True)
            self._results = self.results_path.open("w", encoding="utf-8")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown" or (report.when == "setup" and report.passed):
            return
        props = dict(report.user_properties)
        status = props.get(PROP + "status")
        if status is None:
            return
        key = (props[PROP + "task_id"], props[PROP + "sample"])
        if key in self.outcomes:
            return
        self.outcomes[key] = Outcome(key[0], key[1], status, props.get(PROP + "duration_ms"))
        detail = props.get(PROP + "detail", "")
        self.details[key] = detail
        self._write_result(key, status, props.get(PROP + "duration_ms"), detail)

    def _write_result(self, key: tuple[str, int], status: str, duration_ms: float | None, detail: str) -> None:
        if self._results is None:
            return
        sample = self.samples[key]
        line = {"task_id": key[0], "sample": key[1], "status": status, "passed": status == "passed",
                "completion": sample.completion, "duration_ms": duration_ms, "detail": detail}
        if sample.generation is not None:
            line.update({name: sample.generation[name] for name in RUNTIME_FIELDS})
        self._results.write(json.dumps(line) + "\n")
        self._results.flush()

    def record_interrupted_generation(self, generated: list[Sample]) -> None:
        """Ctrl-C during generation: the completions that arrived are written as not_run, then closed."""
        if self.results_path is None:
            return
        self.samples.update((sample.key, sample) for sample in generated)
        if self._results is None:
            self.pytest_sessionstart()
        for sample in generated:
            detail = sample.not_run if sample.completion is None else "interrupted before execution"
            self._write_result(sample.key, "not_run", None, detail or "")
        self._results.close()
        self._results = None

    # -- the end of the session
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        planned = self.planned if self.planned is not None else []
        self.summary = summarize(planned, self.outcomes, self.run.config.params.k)
        if self.generation_failures() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # lost samples must not look green
        if self._results is not None:
            for key in planned:
                if key not in self.outcomes:
                    self._write_result(key, "not_run", None, "run cut short before this sample ran")
            self._results.close()
            self._results = None
        if self.report_path is not None:
            self.report_path.parent.mkdir(parents=True, exist_ok=True)
            self.report_path.write_text(json.dumps(self.report(), indent=2) + "\n", encoding="utf-8")

    def report(self) -> dict[str, Any]:
        summary = self.summary
        assert summary is not None, "report() is called after pytest_sessionfinish"
        config, selection = self.run.config, self.run.plan.selection
        measurements: dict[str, Any] = {}
        for k, value in summary.pass_at.items():
            measurements[f"human-eval.pass_at_{k}"] = {"value": value, "class": "deterministic", "official": True}
        measurements["human-eval.coverage"] = {"value": summary.coverage, "class": "deterministic",
                                               "official": False}
        if summary.avg_latency_ms is not None:
            measurements["human-eval.avg_latency_ms"] = {"value": round(summary.avg_latency_ms, 3),
                                                         "class": "timing", "official": False}
        measurements.update(self._generation_measurements(summary))
        problems = {}
        for task_id, score in summary.problems.items():
            entry: dict[str, Any] = {"n": score.n, "c": score.c}
            entry.update({f"pass_at_{k}": v for k, v in score.pass_at.items()})
            entry["statuses"] = score.statuses
            problems[task_id] = entry
        return {
            "measurements": measurements,
            "counts": summary.counts,
            "planned": summary.planned,
            "attempted": summary.attempted,
            "coverage": summary.coverage,
            "success_rate": summary.success_rate,
            "attempted_success_rate": summary.attempted_success_rate,
            "problems": problems,
            "dataset": {"name": selection.name, "label": selection.label, "digest": selection.digest,
                        "problems": len(selection.problems), "full": selection.full},
            "run": {
                "mode": self.mode_label(),
                "model": config.target.model,
                "n": _samples_per_problem(summary),
                "k": sorted(summary.pass_at),
                "temperature": config.params.temperature if config.target.mode == "runtime" else None,
                "api": config.target.api if config.target.mode == "runtime" else None,
                "timeout_s": config.params.timeout_s,
                "isolation": self.run.isolation,
                "versions": _versions(),
            },
            "gate": None,
        }

    def _generated(self) -> list[dict]:
        """The generation records of the planned samples (runtime mode only)."""
        planned = self.planned or []
        return [self.samples[key].generation for key in planned if self.samples[key].generation is not None]

    def _generation_measurements(self, summary: Summary) -> dict[str, Any]:
        records = self._generated()
        if not records:
            return {}
        config = self.run.config
        out: dict[str, Any] = {}
        timing = {"class": "timing", "official": False}
        out["human-eval.avg_generation_ms"] = {
            "value": round(sum(r["generation_ms"] for r in records) / len(records), 3), **timing}
        prompt = [r["prompt_tokens"] for r in records if r["prompt_tokens"] is not None]
        completion = [r["completion_tokens"] for r in records if r["completion_tokens"] is not None]
        if prompt or completion:  # omitted, not zero, when the server reported no usage
            out["human-eval.total_tokens"] = {"value": sum(prompt) + sum(completion), "class": "usage",
                                              "official": False}
            if config.pricing is not None:
                cost = (sum(prompt) * config.pricing.input_usd_per_mtok
                        + sum(completion) * config.pricing.output_usd_per_mtok) / 1_000_000
                out["human-eval.cost_usd"] = {"value": round(cost, 6), "class": "usage", "official": False}
        if config.params.retry is not None:
            out["human-eval.retry_count"] = {"value": sum(r["attempts"] - 1 for r in records),
                                             "class": "usage", "official": False}
            out["human-eval.retry_overhead_ms"] = {
                "value": round(sum(r["retry_overhead_ms"] for r in records), 3), **timing}
        return out

    def generation_failures(self) -> list[Sample]:
        return [self.samples[key] for key in (self.planned or [])
                if self.samples[key].generation is not None and self.samples[key].completion is None]

    def mode_label(self) -> str:
        target = self.run.config.target
        if target.mode == "mock":
            return "mock-execute" if self.run.config.params.execute else "mock-replay"
        return target.mode

    # -- the terminal
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        summary = self.summary
        if summary is None:
            return
        tr = terminalreporter
        selection = self.run.plan.selection
        tr.write_sep("=", "HumanEval")
        passes = "  ".join(f"pass@{k} {v:.3f}" for k, v in summary.pass_at.items()) or "pass@k n/a"
        coverage = f"coverage {summary.attempted}/{summary.planned}"
        if tr.verbosity < 0:
            tr.write_line(f"{passes}  {coverage}  [{selection.label}]")
            return
        tr.write_line(f"dataset   {selection.label}  {selection.digest[:19]}")
        tr.write_line(f"run       mode {self.mode_label()}  timeout {self.run.config.params.timeout_s:g} s  "
                      f"isolation {self.run.isolation}")
        tr.write_line(f"score     {passes}  ({len(summary.problems)} problems, {summary.planned} samples)")
        for k, why in summary.skipped_k.items():
            tr.write_line(f"          pass@{k} not reported: {why}")
        rate = "n/a" if summary.coverage is None else f"{summary.coverage:.3f}"
        tr.write_line(f"coverage  {rate} ({summary.attempted}/{summary.planned} attempted)")
        tr.write_line("statuses  " + "  ".join(f"{s} {summary.counts[s]}" for s in STATUSES))
        if summary.avg_latency_ms is not None:
            tr.write_line(f"latency   mean {summary.avg_latency_ms:.1f} ms per sample (sandbox execution)")
        measured = self._generation_measurements(summary)
        if measured:
            parts = [f"mean {measured['human-eval.avg_generation_ms']['value']:.0f} ms per sample"]
            for name, label in (("total_tokens", "tokens"), ("cost_usd", "USD"), ("retry_count", "retries")):
                if f"human-eval.{name}" in measured:
                    parts.append(f"{measured[f'human-eval.{name}']['value']:g} {label}")
            tr.write_line("generate  " + "  ".join(parts))
        failures = self.generation_failures()
        if failures:
            tr.write_line(f"GENERATION FAILED for {len(failures)}/{summary.planned} samples (not_run): "
                          f"{failures[0].not_run}")
        slow = sorted((o for o in self.outcomes.values() if o.duration_ms is not None),
                      key=lambda o: o.duration_ms, reverse=True)[:SLOWEST]
        if slow and tr.verbosity >= 0:
            tr.write_line("slowest   " + ", ".join(f"{o.task_id}[{o.sample}] {o.duration_ms:.0f} ms" for o in slow))
        failing = [(key, o) for key, o in sorted(self.outcomes.items(), key=lambda kv: self.positions[kv[0]])
                   if o.status != "passed"]
        if failing:
            tr.write_line(f"failing   {len(failing)} sample(s):")
            for key, outcome in failing[:FAILING_SHOWN]:
                detail = self.details.get(key, "").splitlines()[:1]
                tr.write_line(f"  {key[0]}[{key[1]}] {outcome.status}: {detail[0][:100] if detail else ''}")
            if len(failing) > FAILING_SHOWN:
                tr.write_line(f"  ... and {len(failing) - FAILING_SHOWN} more (see --humaneval-results)")
        for label, path in (("results", self.results_path), ("report", self.report_path)):
            if path is not None:
                tr.write_line(f"{label:9s} {path}")


def _samples_per_problem(summary: Summary) -> int | None:
    sizes = {score.n for score in summary.problems.values()}
    return sizes.pop() if len(sizes) == 1 else None


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for dist in ("pytest-humaneval", "pytest", "pytest-xdist"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    versions["platform"] = sys.platform
    return versions
