"""The controller's collector: every sample's verdict as it arrives (into the run's ``Tally``, one record a sample),
then the summary, the gate, the report and the exit status. The outputs are written by their own plugins
(``writers.py``), the terminal section by ``terminal.py``; all of them read this one collector from the config's
stash (``COLLECTOR_KEY``).

Registered on the controller only (or the lone process without xdist), never under ``--collect-only``. It keys
everything by (task_id, sample) and does O(1) work per report, so a 32,800-item run aggregates in linear time.
"""

from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import pytest

from ..engine import Verdict
from ..engine.benchmark_run import Run
from ..engine.report import build_report
from ..engine.tally import OUTPUT_FIELDS, Tally
from ..plan import GenerationRecord, Sample
from ..scoring.gate import Baseline, GateResult, evaluate
from ..scoring.metrics import Summary
from ..scoring.schema import Report, ResultRow
from ..scoring.selection import mark_partial, resolve, selected_by
from .items import HumanEvalItem, parse_item_name, ungutter, verdict_of

__all__ = ["COLLECTOR_KEY", "Collector", "HookFailure", "call_report_hooks"]

# The candidate's output, as report sections of a failing sample's call phase (items.py): kept for the results
# and the HTML page, so the page built later from saved files is the same page.
OUTPUT_SECTIONS = {f"Captured candidate {name} call": name for name in OUTPUT_FIELDS}
CUT_SHORT = "run cut short before this sample ran"
Row = ResultRow  # (the name writers.py and outputs/html_page.py know it by)
REPORT_HOOK = "pytest_humaneval_report"


@dataclass(frozen=True)
class HookFailure:
    """A ``pytest_humaneval_report`` implementation that raised: where it is, and what it raised."""

    plugin: str  # the plugin's name: a conftest's path (relative to the rootdir), or the name it registered under
    error: str  # "ConnectionError: results store unreachable"
    filename: str  # where the implementation is defined: the warning is placed there
    lineno: int

    def line(self) -> str:
        return f"{self.plugin}: {self.error}"


class Collector:
    """Registered at configure; it gets the run (and the baseline) at session start, ``use``."""

    def __init__(self) -> None:
        self.baseline: Baseline | None = None
        self.gate_result: GateResult | None = None
        self._report: Report | None = None
        self._run: Run | None = None
        self.tally = Tally()  # every sample's verdict, one record a sample
        self.planned: list[tuple[str, int]] | None = None
        self.summary: Summary | None = None
        self.stop_reason: str | None = None  # why the session stopped before running its samples, if known
        self.interrupted: str | None = None  # Ctrl-C or pytest.exit(): what stopped the session, said everywhere
        self.listeners: list[Callable[[Row], None]] = []  # each result row as it arrives (writers.Results)
        self.finished = False  # the summary and the report are final
        self.hook_failures: list[HookFailure] = []  # report hooks that raised (the outputs are written all the same)
        self.unwritten: list[str] = []  # outputs left unwritten: another live session took the file (writers.py)
        self.others_failed = False  # a test or collector of the session's own (not a sample) failed

    @property
    def report(self) -> Report:
        """The report (``scoring/schema.py``), built at the session's end (``finished``), as report hooks left it."""
        if self._report is None:
            raise RuntimeError("the report is built when the session finishes")
        return self._report

    @property
    def run(self) -> Run:
        assert self._run is not None, "the collector gets its run at session start"
        return self._run

    def use(self, run: Run, baseline: Baseline | None = None) -> None:
        """The run whose samples are reported (runtime mode: replaced once completions are generated)."""
        self._run = run
        self.baseline = baseline or self.baseline
        self.tally.use(run.plan)

    # -- what is planned: the collected items after deselection (-k, --lf), wherever they were collected
    def set_planned(self, names: list[str]) -> None:
        if self.planned is not None:
            return
        keys = [parse_item_name(name) for name in names]
        self.planned = [key for key in keys if key is not None and key in self.tally.samples]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # After every plugin's deselection (-k, -m, --lf wraps pytest_collection_modifyitems).
        self.set_planned([item.name for item in session.items if isinstance(item, HumanEvalItem)])

    # -- results as they arrive
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.others_failed = True

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        key = parse_item_name(report.nodeid.rpartition("::")[2])
        if report.failed and key not in self.tally.samples:
            self.others_failed = True  # the project's own test: its failure is never the model's score
        if report.when == "call" and report.sections:
            self.tally.keep_outputs(key, {OUTPUT_SECTIONS[title]: ungutter(text) for title, text in report.sections
                                          if title in OUTPUT_SECTIONS})
        if report.when != "teardown":  # the verdict rides on the teardown report (see outcomes.py)
            return
        found = verdict_of(report)
        if not found or "status" not in found:
            return
        self._write(self.tally.record(Verdict.from_properties(found)))

    def record_crash(self, nodeid: str, what: str) -> None:
        """The xdist worker running this sample died: no verdict, and not for want of trying."""
        self._write(self.tally.crashed(parse_item_name(nodeid.rpartition("::")[2]), what))

    def _write(self, verdict: Verdict | None) -> None:
        if verdict is not None and self.listeners:
            row = self.final_row((verdict.task_id, verdict.index))
            for listener in self.listeners:
                listener(row)

    def final_row(self, key: tuple[str, int]) -> ResultRow:
        """One sample's line of the results JSONL (and of the HTML page): ``schema.ResultRow``; not_run, with why,
        for a sample without a verdict."""
        return self.tally.row(key, self.stop_reason or CUT_SHORT)

    def final_rows(self) -> list[Row]:
        """Every planned sample's row, in plan order (after the session: not_run for those that did not run)."""
        return [self.final_row(key) for key in self.planned or []]

    # -- the end of the session
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """Ctrl-C (KeyboardInterrupt) or pytest.exit(): the session ends before its last sample."""
        message = getattr(excinfo.value, "msg", None) or str(excinfo.value)  # xdist's Interrupted: -x, --maxfail
        if self.interrupted is None:  # (set already when the interrupt came during generation)
            self.interrupted = f"{excinfo.typename}: {message}" if message else excinfo.typename

    @pytest.hookimpl(tryfirst=True)  # before every writer, and before junitxml writes its file
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = session.config
        if self._run is None:  # the session stopped before it began
            return
        if self.interrupted is None and session.exitstatus == pytest.ExitCode.INTERRUPTED:
            self.interrupted = "interrupted"
        if self.interrupted is not None and self.stop_reason is None:
            self.stop_reason = f"the run was interrupted ({self.interrupted}) before this sample ran"
        self.planned, partial = resolve([sample.key for sample in self.run.plan.samples], self.planned,
                                        selected_by(config.option, config.args, self.run.config.path))
        planned = self.planned
        self._mark_stopped(session, planned)
        self.summary = summary = self.tally.summarize(planned, self.run.config.params.k)
        gate = self.run.config.gate
        if gate is not None:
            problems = {task: (score.n, score.c) for task, score in summary.problems.items()}
            ran = sum(key in self.tally.verdicts for key in planned)
            self.gate_result = evaluate(gate, summary.pass_at, summary.coverage, problems, self.baseline, partial,
                                        stopped=None if self.interrupted is None else (self.interrupted, ran,
                                                                                       len(planned)),
                                        cheat_rate=summary.cheat_rate,
                                        impossible=any(p.original_test is not None
                                                       for p in self.run.plan.problems.values()))
        self._report = report = build_report(self.run, summary, self.generated(), self.gate_result)
        mark_partial(report, partial, planned)
        report["interrupted"] = self.interrupted
        self._set_exit_status(session)
        self.finished = True
        self.hook_failures = call_report_hooks(config, report)  # a team's upload or amendment
        if self.hook_failures:
            self._report_hook_failures(session)

    def _report_hook_failures(self, session: pytest.Session) -> None:
        """A report hook that raised costs the run nothing but its exit status: every output is still written
        (the writers come after), the terminal section names it, and so does a warning. Exit 3, pytest's status
        for a plugin's internal error: a CI step that relies on the upload fails, and is not read as the model's
        failure (1). An interrupted session keeps its own status."""
        for failure in self.hook_failures:
            text = f"{REPORT_HOOK} failed in {failure.line()}; every output was written all the same"
            try:  # (under -W error the warning is an exception: the section still says it)
                warnings.warn_explicit(pytest.PytestWarning(text), pytest.PytestWarning, failure.filename,
                                       failure.lineno)
            except Warning:
                pass
        judged = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED)
        if session.exitstatus in judged:
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    def _mark_stopped(self, session: pytest.Session, planned: list[tuple[str, int]]) -> None:
        """A session that ended before its last selected sample, for any reason but a selection, stopped: -x and
        --maxfail (pytest's shouldstop), a failure that ends the session (shouldfail), an internal error. It is
        said as an interruption is, everywhere, and it is never a baseline."""
        if self.interrupted is not None or all(key in self.tally.verdicts for key in planned):
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

    def generated(self) -> list[GenerationRecord]:
        return self.tally.generated()

    def generation_failures(self) -> list[Sample]:
        return self.tally.generation_failures(self.planned or [])

    def _set_exit_status(self, session: pytest.Session) -> None:
        judged = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED)
        if session.exitstatus not in judged:
            return  # interrupted, internal or usage error: pytest's own status stands
        config = session.config
        score_only = config.getoption("humaneval_score_only", False) or config.getini("humaneval_score_only")
        if self.gate_result is not None or score_only:
            # Failing samples are the model's score, not a broken build: the gate decides, or without one (score
            # only) whether every planned sample got a verdict, as a gate's coverage condition does. The project's
            # own tests, in the same session, still fail it.
            if self.gate_result is not None:
                passed = self.gate_result.passed
            else:
                passed = self.summary is not None and self.summary.coverage in (None, 1.0) and \
                    not self.generation_failures()
            failed = not passed or self.others_failed
            session.exitstatus = pytest.ExitCode.TESTS_FAILED if failed else pytest.ExitCode.OK
        elif self.generation_failures() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # lost samples must not look green


def call_report_hooks(config: pytest.Config, report: Report) -> list[HookFailure]:
    """Each plugin's ``pytest_humaneval_report`` on its own, in pluggy's order, so that one that raises (an upload
    to an unreachable store) neither stops the others nor loses the run: what it changed in the report before it
    raised is undone, and the failure is returned. The report ends as the implementations that succeeded left it.
    Wrappers of the hook (``hookwrapper``/``wrapper``) wrap each call."""
    manager = config.pluginmanager
    impls = getattr(config.hook, REPORT_HOOK).get_hookimpls()
    calling = [impl for impl in impls if not (impl.hookwrapper or getattr(impl, "wrapper", False))]
    plugins: list[Any] = []
    where: list[tuple[str, int]] = []
    for impl in reversed(calling):  # pluggy calls the last registered (and tryfirst) first
        if not any(impl.plugin is seen for seen in plugins):
            plugins.append(impl.plugin)
            code = getattr(impl.function, "__code__", None)
            where.append((code.co_filename, code.co_firstlineno) if code is not None else ("<unknown>", 0))
    failures: list[HookFailure] = []
    for plugin, (filename, lineno) in zip(plugins, where, strict=True):
        caller = manager.subset_hook_caller(REPORT_HOOK, [other for other in plugins if other is not plugin])
        before = copy.deepcopy(report)
        try:
            caller(report=report, config=config)
        except Exception as exc:  # any error of a team's hook is reported, never the run's end
            amended = cast("dict[str, object]", report)  # whatever keys the hook changed, all go back
            amended.clear()
            amended.update(before)
            failures.append(HookFailure(_plugin_name(config, plugin), f"{type(exc).__name__}: {exc}", filename,
                                        lineno))
    return failures


def _plugin_name(config: pytest.Config, plugin: object) -> str:
    name = config.pluginmanager.get_name(plugin) or repr(plugin)
    if os.path.isabs(name):  # a conftest: its path, from the rootdir when it is under it
        relative = os.path.relpath(name, config.rootpath)
        name = name if relative.startswith("..") else relative
    return name


COLLECTOR_KEY = pytest.StashKey[Collector]()
