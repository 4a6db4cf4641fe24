"""Controller-side aggregation: results JSONL as results arrive, the gate, the report, JUnit, the terminal.

Registered as a plugin on the controller only (or the lone process without xdist). It keys everything by
(task_id, sample) and does O(1) work per report, so a 32,800-item run aggregates in linear time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any, Literal

import pytest

from .completions.sources import Sample
from .items import HumanEvalItem, parse_item_name, ungutter
from .outcomes import verdict_of
from .run import Run
from .scoring import html_report, protocol
from .scoring.gate import Baseline, GateResult, evaluate
from .scoring.metrics import STATUSES, Outcome, Summary, fmt, summarize
from .scoring.outputs import OutputError, is_job_summary, open_private, publish
from .scoring.report import build_report, mode_label, render_markdown, truncated_count
from .scoring.selection import Partial, mark_partial, resolve, selected_by

try:  # junitxml's handle, to add suite-level properties the way record_testsuite_property does
    from _pytest.junitxml import xml_key as junit_xml_key
except ImportError:  # pragma: no cover - a pytest without it: no suite properties, nothing else lost
    junit_xml_key = None  # type: ignore[assignment]

__all__ = ["Aggregator"]

SLOWEST = 10
FAILING_SHOWN = 10  # the score stays in view: the section is about 25 lines with them
TRUNCATED_WARN = 0.05  # warn when more than this share of the answers were cut at max_tokens
RUNTIME_FIELDS = ("raw", "reasoning", "finish_reason", "prompt_tokens", "completion_tokens", "reasoning_tokens",
                  "generation_ms", "attempts", "cached")
# The candidate's output, as report sections of a failing sample's call phase (items.py): kept for the results
# and the HTML page, so the page built later from saved files is the same page.
OUTPUT_SECTIONS = {f"Captured candidate {name} call": name for name in ("stdout", "stderr", "traceback")}
CUT_SHORT = "run cut short before this sample ran"


class Aggregator:
    def __init__(self, run: Run, results_path: str | None, report_path: str | None,
                 markdown_path: str | None = None, baseline: Baseline | None = None,
                 html_path: str | None = None) -> None:
        self.results_path = Path(results_path) if results_path else None
        self.report_path = Path(report_path) if report_path else None
        self.markdown_path = Path(markdown_path) if markdown_path else None
        self.html_path = Path(html_path) if html_path else None
        self.baseline = baseline
        self.gate_result: GateResult | None = None
        self.report: dict[str, Any] = {}
        self.use(run)
        self.planned: list[tuple[str, int]] | None = None
        self.outcomes: dict[tuple[str, int], Outcome] = {}
        self.details: dict[tuple[str, int], str] = {}
        self.outputs: dict[tuple[str, int], dict[str, str]] = {}  # failing samples' stdout, stderr, traceback
        self.suites: dict[tuple[str, int], dict[str, Any]] = {}  # HumanEval+: base_/plus_status and _failure
        self.repeats: dict[tuple[str, int], int] = {}  # a repeat: the sample whose execution its verdict is
        self.summary: Summary | None = None
        self.stop_reason: str | None = None  # why the session stopped before running its samples, if known
        self.interrupted: str | None = None  # Ctrl-C or pytest.exit(): what stopped the session, said everywhere
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

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # After every plugin's deselection (-k, -m, --lf wraps pytest_collection_modifyitems).
        self.set_planned([item.name for item in session.items if isinstance(item, HumanEvalItem)])

    # -- results as they arrive
    def pytest_sessionstart(self) -> None:
        if self.results_path is not None:
            self.results_path.parent.mkdir(parents=True, exist_ok=True)
            # Readable by this user alone while samples run: a candidate that runs as another uid (and finds the
            # file at all) cannot copy its neighbours' passing answers from it. Its usual mode comes back at the end.
            try:
                self._results = open_private(self.results_path)
            except OutputError as exc:  # another live session writes it (it started since configure)
                raise pytest.UsageError(str(exc)) from None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" and report.sections:
            self._keep_output(report)
        if report.when != "teardown":  # the verdict rides on the teardown report (see outcomes.py)
            return
        verdict = verdict_of(report)
        if not verdict or "status" not in verdict:
            return
        key = (verdict["task_id"], verdict["sample"])
        if key in self.outcomes:
            return
        status, detail = verdict["status"], verdict.get("detail", "")
        self.outcomes[key] = Outcome(key[0], key[1], status, verdict.get("duration_ms"), verdict.get("base_status"))
        self.details[key] = detail
        if "base_status" in verdict:  # HumanEval+: both suites' statuses and first failing inputs
            self.suites[key] = {f"{name}_{field}": verdict.get(f"{name}_{prop}") or None
                                for name in ("base", "plus") for field, prop in (("status", "status"),
                                                                                 ("failure", "detail"))}
        if verdict.get("repeat_of") is not None:
            self.repeats[key] = verdict["repeat_of"]
        self._write_result(key, status, verdict.get("duration_ms"), detail)

    def record_crash(self, nodeid: str, what: str) -> None:
        """The xdist worker running this sample died: no verdict, and not for want of trying."""
        key = parse_item_name(nodeid.rpartition("::")[2])
        if key is None or key not in self.samples or key in self.outcomes:
            return
        detail = f"the xdist worker running this sample crashed, so it has no verdict ({what})"
        self.outcomes[key] = Outcome(key[0], key[1], "harness_error", None)
        self.details[key] = detail
        self._write_result(key, "harness_error", None, detail)

    def _keep_output(self, report: pytest.TestReport) -> None:
        key = parse_item_name(report.nodeid.rpartition("::")[2])
        outputs = {OUTPUT_SECTIONS[title]: ungutter(text) for title, text in report.sections
                   if title in OUTPUT_SECTIONS}
        if key in self.samples and outputs:
            self.outputs[key] = outputs

    def _row(self, key: tuple[str, int], status: str, duration_ms: float | None, detail: str) -> dict[str, Any]:
        """One sample's line of the results JSONL (and of the HTML page)."""
        sample = self.samples[key]
        line = {"task_id": key[0], "sample": key[1], "status": status, "passed": status == "passed",
                "completion": sample.completion, "duration_ms": duration_ms, "detail": detail}
        if sample.solution is not None:  # a whole program, run as written (read back as EvalPlus reads it)
            line["solution"] = sample.solution
        if sample.generation is not None:
            line.update({name: sample.generation.get(name) for name in RUNTIME_FIELDS})
        line.update(self.suites.get(key, {}))
        line.update(self.outputs.get(key, {}))
        if key in self.repeats:  # an identical earlier sample's verdict: the sample whose execution it carries
            line["repeat_of"] = self.repeats[key]
        return line

    def _final_row(self, key: tuple[str, int]) -> dict[str, Any]:
        outcome = self.outcomes.get(key)
        if outcome is None:  # (a sample generation never reached says so, not only why the run stopped)
            why = self.samples[key].not_run if self.samples[key].completion is None else None
            return self._row(key, "not_run", None, why or self.stop_reason or CUT_SHORT)
        return self._row(key, outcome.status, outcome.duration_ms, self.details.get(key, ""))

    def _write_result(self, key: tuple[str, int], status: str, duration_ms: float | None, detail: str) -> None:
        if self._results is None:
            return
        self._results.write(json.dumps(self._row(key, status, duration_ms, detail)) + "\n")
        self._results.flush()

    # -- the end of the session
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """Ctrl-C (KeyboardInterrupt) or pytest.exit(): the session ends before its last sample."""
        message = getattr(excinfo.value, "msg", None) or str(excinfo.value)  # xdist's Interrupted: -x, --maxfail
        if self.interrupted is None:  # (set already when the interrupt came during generation)
            self.interrupted = f"{excinfo.typename}: {message}" if message else excinfo.typename

    @pytest.hookimpl(tryfirst=True)  # before junitxml writes its file: it carries our suite properties
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = session.config
        if self.interrupted is None and session.exitstatus == pytest.ExitCode.INTERRUPTED:
            self.interrupted = "interrupted"
        if self.interrupted is not None and self.stop_reason is None:
            self.stop_reason = f"the run was interrupted ({self.interrupted}) before this sample ran"
        self.planned, partial = resolve([sample.key for sample in self.run.plan.samples], self.planned,
                                        selected_by(config.option, config.args, self.run.config.path))
        planned = self.planned
        self._mark_stopped(session, planned)
        self.summary = summary = summarize(planned, self.outcomes, self.run.config.params.k)
        gate = self.run.config.gate
        if gate is not None:
            problems = {task: (score.n, score.c) for task, score in summary.problems.items()}
            ran = sum(key in self.outcomes for key in planned)
            self.gate_result = evaluate(gate, summary.pass_at, summary.coverage, problems, self.baseline, partial,
                                        stopped=None if self.interrupted is None else (self.interrupted, ran,
                                                                                       len(planned)))
        self.report = build_report(self.run, summary, self._generated(), self.gate_result)
        mark_partial(self.report, partial, planned)
        self.report["interrupted"] = self.interrupted
        self._set_exit_status(session)
        if self._results is not None:
            for key in planned:
                if key not in self.outcomes:
                    self._write_result(key, "not_run", None, self._final_row(key)["detail"])
            self._results.close()
            self._results = None
            assert self.results_path is not None  # the results file is open only when it has a path
            publish(self.results_path)
        self._junit(session.config)
        for path, text in ((self.report_path, json.dumps(self.report, indent=2) + "\n"),
                           (self.markdown_path, render_markdown(self.report))):
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                if path == self.markdown_path and is_job_summary(path):
                    with path.open("a", encoding="utf-8") as handle:  # other steps' sections stay
                        handle.write(text)
                else:
                    path.write_text(text, encoding="utf-8")
        if self.html_path is not None:  # last: a page that cannot be written loses no other output
            self._write_html(planned)

    def _mark_stopped(self, session: pytest.Session, planned: list[tuple[str, int]]) -> None:
        """A session that ended before its last selected sample, for any reason but a selection, stopped: -x and
        --maxfail (pytest's shouldstop), a failure that ends the session (shouldfail), an internal error. It is
        said as an interruption is, everywhere, and it is never a baseline."""
        if self.interrupted is not None or all(key in self.outcomes for key in planned):
            return
        why = session.shouldstop or session.shouldfail
        if why:
            self.interrupted = f"stopped: {why}" if isinstance(why, str) else "stopped"
        elif session.exitstatus == pytest.ExitCode.INTERNAL_ERROR:
            self.interrupted = "stopped: internal error"
        else:
            self.interrupted = "stopped before its last sample"
        if self.stop_reason is None:
            self.stop_reason = f"the run was cut short ({self.interrupted}) before this sample ran"

    def _write_html(self, planned: list[tuple[str, int]]) -> None:
        assert self.html_path is not None  # called only when it is set
        problems = {task: {"prompt": problem.prompt, "test": problem.test}
                    for task, problem in self.run.plan.problems.items() if task in self.report["problems"]}
        try:  # read at the start already; only its per-problem statuses are new here
            baseline = json.loads(self.baseline.path.read_text(encoding="utf-8")) if self.baseline else None
        except (OSError, ValueError):
            baseline = None
        page = html_report.render(self.report, (self._final_row(key) for key in planned), problems, baseline)
        self.html_path.parent.mkdir(parents=True, exist_ok=True)
        self.html_path.write_text(page, encoding="utf-8")

    def _generated(self) -> list[dict[str, Any]]:
        """The generation records of every sample of the plan (runtime mode only): generation covers the whole
        plan whatever -k or --lf select, and what it cost is what this run paid."""
        return [sample.generation for sample in self.samples.values() if sample.generation is not None]

    def generation_failures(self) -> list[Sample]:
        return [self.samples[key] for key in (self.planned or [])
                if self.samples[key].generation is not None and self.samples[key].completion is None]

    def _set_exit_status(self, session: pytest.Session) -> None:
        judged = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED)
        if session.exitstatus not in judged:
            return  # interrupted, internal or usage error: pytest's own status stands
        if self.gate_result is not None:
            # With a gate, failing samples are the model's score, not a broken build: the gate decides.
            session.exitstatus = pytest.ExitCode.OK if self.gate_result.passed else pytest.ExitCode.TESTS_FAILED
        elif self.generation_failures() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # lost samples must not look green

    def _junit(self, config: pytest.Config) -> None:
        """Suite properties and a test case for the gate, in the JUnit file (with or without xdist)."""
        xml = config.stash.get(junit_xml_key, None) if junit_xml_key is not None else None
        if xml is None:
            return
        report = self.report
        for name, measurement in report["measurements"].items():
            if name.startswith(("human-eval.pass_at_", "human-eval.base_pass_at_")) or name == "human-eval.coverage":
                xml.add_global_property(name, measurement["value"])
        xml.add_global_property("human-eval.model", report["run"]["model"] or report["run"]["mode"])
        xml.add_global_property("human-eval.dataset_label", report["dataset"]["label"])
        xml.add_global_property("human-eval.dataset_digest", report["dataset"]["digest"])
        if report["run"]["protocol"] is not None:  # None: a mock run, which samples no model
            xml.add_global_property("human-eval.protocol", protocol.line(report["run"]["protocol"]))
        partial = report["dataset"]["partial"]
        if partial is not None:
            xml.add_global_property("human-eval.partial", Partial(**partial).describe())
        if self.interrupted is not None:
            xml.add_global_property("human-eval.interrupted", self.interrupted)
        if self.gate_result is None:
            return
        xml.add_global_property("human-eval.gate", "PASS" if self.gate_result.passed else "FAIL")
        nodeid = "humaneval::gate"
        longrepr = None if self.gate_result.passed else "gate FAILED: " + "; ".join(self.gate_result.failures())
        phases: tuple[tuple[Literal["setup", "call", "teardown"], Literal["passed", "failed"]], ...] = (
            ("setup", "passed"), ("call", "passed" if longrepr is None else "failed"), ("teardown", "passed"))
        for when, outcome in phases:
            xml.pytest_runtest_logreport(pytest.TestReport(
                nodeid, ("humaneval", None, "gate"), {}, outcome, longrepr if when == "call" else None, when))

    # -- the terminal
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        summary = self.summary
        if summary is None:
            return
        tr = terminalreporter
        dataset = self.report["dataset"]  # the selection as it ran (a partial run says so)
        tr.write_sep("=", "HumanEval")
        passes = "  ".join(f"pass@{k} {v:.3f}" for k, v in summary.pass_at.items()) or "pass@k n/a"
        coverage = f"coverage {summary.attempted}/{summary.planned}"
        described = self.report["run"]["protocol"]
        interrupted = f"INTERRUPTED ({self.interrupted})" if self.interrupted is not None else None
        if tr.verbosity < 0:
            shown = "" if described is None else f"  protocol {_protocol_word(described)}"
            failures = self.generation_failures()
            lost = f"  GENERATION FAILED {len(failures)}/{summary.planned}" if failures else ""
            tr.write_line(f"{passes}  {coverage}  [{dataset['label']}]{shown}{lost}"
                          + (f"  {interrupted}" if interrupted else ""))
            if self.gate_result is not None:
                verdict = "PASS" if self.gate_result.passed else "FAIL: " + "; ".join(self.gate_result.failures())
                tr.write_line(f"gate {verdict}")
            return
        measured = self.report["measurements"]
        tr.write_line(f"dataset   {dataset['label']}  {dataset['digest'][:19]}")
        if interrupted:
            ran = summary.planned - summary.counts["not_run"]
            tr.write_line(f"{interrupted}: {ran}/{summary.planned} samples ran, the others count as not_run",
                          red=True, bold=True)
        tr.write_line(f"run       mode {mode_label(self.run)}  timeout {self.run.config.params.timeout_s:g} s  "
                      f"isolation {self.run.isolation_line}")
        if described is not None:
            tr.write_line(f"protocol  {protocol.line(described)}")
        if summary.base_pass_at is not None:  # HumanEval+: the plus score is the dataset's, base beside it
            passes = "  ".join(f"pass@{k} {v:.3f} (plus)  base {summary.base_pass_at[k]:.3f}"
                               for k, v in summary.pass_at.items()) or passes
        tr.write_line(f"score     {passes}  ({len(summary.problems)} problems, {summary.planned} samples)")
        for k in summary.pass_at:
            iv = measured[f"human-eval.pass_at_{k}"]["interval"]
            tr.write_line(f"          pass@{k} {iv['confidence']:.0%} interval {iv['low']:.3f} - {iv['high']:.3f} "
                          f"({iv['method']})")
        for k, why in summary.skipped_k.items():
            tr.write_line(f"          pass@{k} not reported: {why}")
        tr.write_line(f"coverage  {fmt(summary.coverage)} ({summary.attempted}/{summary.planned} attempted)")
        tr.write_line("statuses  " + "  ".join(f"{s} {summary.counts[s]}" for s in STATUSES))
        if summary.avg_latency_ms is not None:
            tr.write_line(f"latency   mean {summary.avg_latency_ms:.1f} ms per sample (sandbox execution)")
        if "human-eval.cached_generations" in measured:
            self._write_generation(tr, measured)
        failures = self.generation_failures()
        if failures:
            tr.write_line(f"GENERATION FAILED for {len(failures)}/{summary.planned} samples (not_run): "
                          f"{failures[0].not_run}")
        slow = sorted((o for o in self.outcomes.values() if o.duration_ms is not None and o.status != "not_run"),
                      key=lambda o: o.duration_ms or 0.0, reverse=True)[:SLOWEST]
        if slow and tr.verbosity >= 0:
            tr.write_line("slowest   " + ", ".join(f"{o.task_id}[{o.sample}] {o.duration_ms:.0f} ms" for o in slow))
        ordered = sorted(self.outcomes.items(), key=lambda kv: self.positions[kv[0]])
        failing = [(key, o) for key, o in ordered if o.status not in ("passed", "not_run")]
        never = [key for key, o in ordered if o.status == "not_run"]
        if never:  # skipped, not failed: counted apart, as pytest's outcome line counts them
            first = self.details.get(never[0], "").splitlines()[:1]
            tr.write_line(f"not run   {len(never)} sample(s), e.g. {never[0][0]}[{never[0][1]}]: "
                          f"{first[0][:100] if first else ''}")
        if failing:
            tr.write_line(f"failing   {len(failing)} sample(s):")
            for key, outcome in failing[:FAILING_SHOWN]:
                detail = self.details.get(key, "").splitlines()[:1]
                tr.write_line(f"  {key[0]}[{key[1]}] {outcome.status}: {detail[0][:100] if detail else ''}")
            if len(failing) > FAILING_SHOWN:
                where = ("every sample is in the files below" if self.results_path or self.html_path else
                         "--humaneval-results PATH or --humaneval-html PATH keeps every sample")
                tr.write_line(f"  ... and {len(failing) - FAILING_SHOWN} more: {where}")
        quiet = tr.config.pluginmanager.get_plugin("humaneval-quiet")
        if quiet is not None and quiet.hidden:  # left out of pytest's failure blocks (terminal.py)
            more = "--tb=short or -v show their failure blocks" if quiet.lines else \
                "-rf lists one line each, --tb=short or -v pytest's failure blocks"
            tr.write_line(f"details   {quiet.hidden} failing samples are the score, not broken tests: {more}")
        for label, path in (("results", self.results_path), ("report", self.report_path),
                            ("markdown", self.markdown_path), ("html", self.html_path)):
            if path is not None:
                tr.write_line(f"{label:9s} {path}")
        if self.gate_result is not None:
            self._write_gate(tr, self.gate_result)
        # The score again, last, just above pytest's outcome line: what the tail of a CI log shows.
        verdict = "" if self.gate_result is None else f"  gate {'PASS' if self.gate_result.passed else 'FAIL'}"
        tr.write_line(f"HumanEval {passes}  {coverage}  [{dataset['label']}]{verdict}"
                      + (f"  {interrupted}" if interrupted else ""), bold=True)

    def _write_generation(self, tr: Any, measured: dict[str, Any]) -> None:
        cached = measured["human-eval.cached_generations"]["value"]
        parts = [f"{cached} cached"] if cached else []
        if "human-eval.avg_generation_ms" in measured:
            parts.append(f"mean {measured['human-eval.avg_generation_ms']['value']:.0f} ms per sample")
        for name, label in (("total_tokens", "tokens"), ("reasoning_tokens", "of them reasoning"),
                            ("cost_usd", "USD"), ("retry_count", "retries")):
            if f"human-eval.{name}" in measured:
                parts.append(f"{measured[f'human-eval.{name}']['value']:g} {label}")
        tr.write_line("generate  " + "  ".join(parts))
        self._warn_truncated(tr)

    def _warn_truncated(self, tr: Any) -> None:
        answered = [record for record in self._generated() if record.get("raw") is not None]
        cut = truncated_count(answered)
        if answered and cut / len(answered) > TRUNCATED_WARN:
            params = self.run.config.params
            limit = (params.extra_body or {}).get("max_completion_tokens")
            name = f"params.max_tokens ({params.max_tokens})" if limit is None else \
                f"params.extra_body.max_completion_tokens ({limit})"
            tr.write_line(f"WARNING: {cut}/{len(answered)} answers ({cut / len(answered):.0%}) were cut at max_tokens "
                          f"(finish_reason: length): raise {name}; a thinking model needs room for its reasoning "
                          "and its answer", yellow=True)

    def _write_gate(self, tr: Any, gate: GateResult) -> None:
        tr.write_sep("-", f"HumanEval gate: {'PASS' if gate.passed else 'FAIL'}")
        for c in gate.conditions:
            detail = f"  ({c.detail})" if c.detail else ""
            verdict = "PASS" if c.passed else "FAIL"
            tr.write_line(f"{verdict}  {c.name:28s} {fmt(c.value)} vs {fmt(c.threshold)}{detail}")
        if gate.comparison is not None and gate.baseline is not None:
            cmp = gate.comparison
            tr.write_line(f"baseline  {gate.baseline.label} ({gate.baseline.model or 'model unknown'}): pass@1 "
                          f"{cmp.baseline_pass_at_1:.3f} -> {cmp.new_pass_at_1:.3f}, mean difference "
                          f"{cmp.mean_difference:+.3f} [{cmp.interval.low:+.3f}, {cmp.interval.high:+.3f}]")
            for title, tasks in (("regressed", cmp.regressions), ("improved", cmp.improvements)):
                if tasks:
                    tr.write_line(f"{title} ({len(tasks)}): {', '.join(tasks)}")


def _protocol_word(described: dict[str, Any]) -> str:
    """The -q line's protocol: the preset, the published ones it matches, or why it matches none."""
    if described["name"]:
        return str(described["name"])
    if described["temperature"] is None:
        return "unknown"
    return "/".join(described["matches"]) or "unpublished"
