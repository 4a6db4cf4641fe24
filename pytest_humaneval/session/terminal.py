"""What a benchmark session prints: progress, the HumanEval section and the outcome, not a traceback per sample.

A failing sample is the benchmark's normal result (most models fail some problems), not a broken test, so by
default pytest's failure blocks (the FAILURES and ERRORS sections) and its ``FAILED``/``ERROR`` lines of the
short summary leave the samples out; the HumanEval section lists the first failing samples in brief and points
to the files that hold every one. The final line (``1292 failed, 348 passed in ...``), the exit status, JUnit
and every other output still count every sample, and the session's other tests keep pytest's usual output.

Asking pytest for details gives them back, as a pytest user expects (on the command line or in ``addopts``):
``-r CHARS`` other than the default ``fE`` brings the samples' short-summary lines back (``-rf``: one ``FAILED``
line each); ``--tb STYLE`` other than ``auto``, ``-v``, or ``-rA``/``-rP`` (the tests' output too) bring back
both their failure blocks and their lines.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import pytest

from .. import protocols
from ..engine.report import mode_label, truncated_count
from ..engine.verdict import shorten
from ..protocols import ProtocolSection
from ..scoring.gate import GateResult, cheat_comparison
from ..scoring.metrics import STATUSES, dataset_title, fmt
from ..scoring.schema import Measurement
from .items import cheat_line
from .summary import COLLECTOR_KEY, Collector

__all__ = ["SAMPLE_ATTR", "Progress", "QuietSamples", "Section", "is_sample", "mark_sample"]

SAMPLE_ATTR = "humaneval_sample"  # on every report of a sample's item (a report's attributes cross xdist)
DEFAULT_TBSTYLE = "auto"
DEFAULT_REPORTCHARS = "fE"  # pytest's default for -r since 6.0
HIDDEN_STATS = ("failed", "error")


def mark_sample(report: pytest.TestReport) -> None:
    setattr(report, SAMPLE_ATTR, True)


def is_sample(report: object) -> bool:
    return getattr(report, SAMPLE_ATTR, False)


class Progress:
    """Progress of one-time work at session start (a dataset download, expected outputs), through pytest's
    terminal reporter: one line updated in place on a terminal; in a log, each phase's first and last states
    only. Without a terminal reporter (``-p no:terminal``), on stderr the same way."""

    def __init__(self, config: pytest.Config | None = None, stream: IO[str] | None = None) -> None:
        self.terminal: pytest.TerminalReporter | None = (
            config.pluginmanager.get_plugin("terminalreporter") if config is not None else None)
        self.stream = stream or sys.stderr
        if self.terminal is not None:
            self.tty = bool(self.terminal.isatty)
        else:
            self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.open = False  # a phase has shown its first state and not its last

    def __call__(self, text: str, final: bool = False) -> None:
        if self.tty:
            self._write("\r" + text + "\x1b[K" + ("\n" if final else ""))
        elif final or not self.open:
            self._write(text + "\n")
        self.open = not final

    def _write(self, text: str) -> None:
        if self.terminal is not None:
            self.terminal.write(text, flush=True)
        else:
            self.stream.write(text)
            self.stream.flush()


class QuietSamples:
    """Registered on the controller. pytest's terminal reporter writes the failure blocks before the other
    plugins' summaries and the short summary after them, so the samples are taken out of its stats around all of
    it (the outer wrapper), put back in the middle when their summary lines are wanted, and put back at the end for
    the final counts."""

    def __init__(self, config: pytest.Config) -> None:
        option = config.option
        verbose = getattr(option, "verbose", 0) > 0
        tb = getattr(option, "tbstyle", DEFAULT_TBSTYLE) != DEFAULT_TBSTYLE
        chars = getattr(option, "reportchars", DEFAULT_REPORTCHARS)
        # -rA and -rP ask for the tests' output sections too: the failure blocks are what a sample has of them.
        self.blocks = verbose or tb or "A" in chars or "P" in chars  # the samples' failure blocks are shown
        self.lines = self.blocks or chars != DEFAULT_REPORTCHARS  # the samples' FAILED/ERROR lines are shown
        self.hidden = 0  # failing or erroring samples left out of pytest's blocks (and lines, unless shown)
        self._kept: dict[str, list[Any]] = {}
        self._stats: dict[str, list[Any]] | None = None
        self._config = config

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)  # outside the terminal reporter's own wrapper
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> Iterator[None]:
        if not self.blocks:
            self._leave_out(terminalreporter.stats)
        try:
            yield
        finally:
            self._put_back()

    @pytest.hookimpl(trylast=True)  # after the terminal reporter has counted it
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A sample's setup and teardown reports are never shown (pytest files them under the category ''), yet
        the terminal reporter keeps every one for the session: two objects per sample, a third of the
        controller's memory at n = 1,000 (164,000 samples). Its counts and lines come from the other categories."""
        if report.when != "call" and is_sample(report):
            terminal = self._config.pluginmanager.get_plugin("terminalreporter")
            kept = getattr(terminal, "stats", {}).get("")
            if kept and kept[-1] is report:
                kept.pop()

    def plugins(self) -> list[tuple[str, object]]:
        """(name, plugin) to register: this object and its inner half."""
        return [("humaneval-quiet", self), ("humaneval-quiet-lines", _LinesBack(self))]

    def _leave_out(self, stats: dict[str, list[Any]]) -> None:
        hidden: set[int] = set()
        for key in HIDDEN_STATS:
            reports = stats.get(key)
            if reports:
                self._kept[key] = reports
                stats[key] = [report for report in reports if not is_sample(report)]
                if key == "failed":  # (a sample's error is a harness_error: the section lists it apart)
                    hidden.update(report.nodeid for report in reports if is_sample(report))
        self.hidden = len(hidden)
        self._stats = stats

    def _put_back(self) -> None:
        if self._stats is not None:
            self._stats.update(self._kept)
        self._kept, self._stats = {}, None


class _LinesBack:
    """Inside the terminal reporter's wrapper, after the other summaries (the HumanEval section reads how many
    samples were left out) and before the short summary: the samples' lines come back when they are wanted."""

    def __init__(self, quiet: QuietSamples) -> None:
        self.quiet = quiet

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self) -> None:
        if self.quiet.lines:
            self.quiet._put_back()


# -- the HumanEval section -----------------------------------------------------------------------------------

SLOWEST = 10
FAILING_SHOWN = 10  # the score stays in view: the section is about 25 lines with them
ERROR_SHOWN = 400  # of a harness_error's detail: what went wrong in the harness, which the user must be told
REASONS_SHOWN = 5  # distinct reasons generation failed for
LINE_SHOWN = 100  # of a failing sample's detail (cut at a space, with "...": its results row has all of it)
TRUNCATED_WARN = 0.05  # warn when more than this share of the answers were cut at max_tokens
OUTPUTS = (("results", "humaneval_results"), ("report", "humaneval_report"), ("markdown", "humaneval_markdown"),
           ("html", "humaneval_html"))


class Section:
    """The HumanEval section of the terminal summary, from the collector's figures (registered on the controller
    with it; ``quiet`` says how many failing samples pytest's own sections left out)."""

    def __init__(self, config: pytest.Config, quiet: QuietSamples | None) -> None:
        self.config, self.quiet = config, quiet
        self.outputs = [(label, Path(config.getoption(dest))) for label, dest in OUTPUTS if config.getoption(dest)]
        self.keeps_samples = bool(config.getoption("humaneval_results") or config.getoption("humaneval_html"))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        c = self.config.stash.get(COLLECTOR_KEY, None)
        if c is None or c.summary is None or not c.finished:
            return
        summary, tr = c.summary, terminalreporter
        dataset = c.report["dataset"]  # the selection as it ran (a partial run says so)
        title = dataset_title(c.run.plan.selection.name)  # the run's own dataset, whatever a report hook did
        tr.write_sep("=", title)
        passes = "  ".join(f"pass@{k} {v:.3f}" for k, v in summary.pass_at.items()) or "pass@k n/a"
        if summary.cheat_rate is not None:  # an impossible dataset: the pass rate is the cheat rate
            passes += f"  cheat rate {summary.cheat_rate:.3f}"
        coverage = f"coverage {summary.attempted}/{summary.planned}"
        described = c.report["run"]["protocol"]
        interrupted = f"INTERRUPTED ({c.interrupted})" if c.interrupted is not None else None
        if tr.verbosity < 0:
            shown = "" if described is None else f"  protocol {_protocol_word(described)}"
            failures = c.generation_failures()
            lost = f"  GENERATION FAILED {len(failures)}/{summary.planned}" if failures else ""
            tr.write_line(f"{passes}  {coverage}  [{dataset['label']}]{shown}{lost}"
                          + (f"  {interrupted}" if interrupted else ""))
            if c.gate_result is not None:
                verdict = "PASS" if c.gate_result.passed else "FAIL: " + "; ".join(c.gate_result.failures())
                tr.write_line(f"gate {verdict}")
            _write_hook_failures(tr, c)
            return
        measured = c.report["measurements"]
        tr.write_line(f"dataset   {dataset['label']}  {dataset['digest'][:19]}")
        if interrupted:
            ran = summary.planned - summary.counts["not_run"]
            tr.write_line(f"{interrupted}: {ran}/{summary.planned} samples ran, the others count as not_run",
                          red=True, bold=True)
        tr.write_line(f"run       mode {mode_label(c.run)}  timeout {c.run.config.params.timeout_s:g} s  "
                      f"isolation {c.run.isolation_line}")
        if described is not None:
            tr.write_line(f"protocol  {protocols.line(described)}")
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
        for facet, groups in c.report.get("breakdown", {}).items():  # LiveCodeBench's rows: per difficulty, platform
            tr.write_line(f"          by {facet}: " + "  ".join(
                f"{name} {'  '.join(f'{key} {value:.3f}' for key, value in group['pass_at'].items())} "
                f"({group['problems']})" for name, group in groups.items()))
        if summary.impossible is not None:
            self._write_cheating(tr, c.report)
        tr.write_line(f"coverage  {fmt(summary.coverage)} ({summary.attempted}/{summary.planned} attempted)")
        tr.write_line("statuses  " + "  ".join(f"{s} {summary.counts[s]}" for s in STATUSES))
        if summary.avg_latency_ms is not None:
            tr.write_line(f"latency   mean {summary.avg_latency_ms:.1f} ms per sample (sandbox execution)")
        if "human-eval.cached_generations" in measured:
            self._write_generation(tr, c, measured)
        failures = c.generation_failures()
        if failures:
            self._write_generation_failures(tr, [sample.not_run or "" for sample in failures], summary.planned)
        verdicts = c.tally.verdicts
        slow = sorted((v for v in verdicts.values() if v.duration_ms is not None and v.status != "not_run"),
                      key=lambda v: v.duration_ms or 0.0, reverse=True)[:SLOWEST]
        if slow and tr.verbosity >= 0:
            tr.write_line("slowest   " + ", ".join(f"{v.task_id}[{v.index}] {v.duration_ms:.0f} ms" for v in slow))
        ordered = sorted(verdicts.items(), key=lambda kv: c.tally.positions[kv[0]])
        impossible = summary.impossible is not None  # its failures are its cheats (a pass), not its failed tests
        failing = [(key, v) for key, v in ordered if
                   (v.impossible_category == "cheated" if impossible else
                    v.status not in ("passed", "not_run", "harness_error"))]
        broken = [key for key, v in ordered if v.status == "harness_error"]
        never = [key for key, v in ordered if v.status == "not_run"]
        if never:  # skipped, not failed: counted apart, as pytest's outcome line counts them
            first = verdicts[never[0]].detail.splitlines()[:1]
            tr.write_line(f"not run   {len(never)} sample(s), e.g. {never[0][0]}[{never[0][1]}]: "
                          f"{shorten(first[0], LINE_SHOWN) if first else ''}")
        if broken:  # the harness's failures, not the model's: each with what went wrong, never left out
            tr.write_line(f"harness   {len(broken)} sample(s) the harness could not judge (not the model's failures; "
                          "each counts as failed in pass@k):", red=True)
            for key in broken[:FAILING_SHOWN]:
                detail = verdicts[key].detail.splitlines()[:1]
                tr.write_line(f"  {key[0]}[{key[1]}] harness_error: "
                              f"{shorten(detail[0], ERROR_SHOWN) if detail else ''}", red=True)
            if len(broken) > FAILING_SHOWN:
                tr.write_line(f"  ... and {len(broken) - FAILING_SHOWN} more, each with its detail in pytest's "
                              "ERROR lines (-rE) and the results file", red=True)
        if impossible and not failing:
            tr.write_line("cheated   none: no sample passed a test that contradicts its specification")
        if failing:
            tr.write_line(f"cheated   {len(failing)} sample(s), this run's failures:" if impossible else
                          f"failing   {len(failing)} sample(s):")
            for key, judged in failing[:FAILING_SHOWN]:
                if impossible:
                    tr.write_line(f"  {key[0]}[{key[1]}] {cheat_line(judged.impossible_evidence)}")
                    continue
                detail = judged.detail.splitlines()[:1]
                tr.write_line(f"  {key[0]}[{key[1]}] {judged.status}: "
                              f"{shorten(detail[0], LINE_SHOWN) if detail else ''}")
            if len(failing) > FAILING_SHOWN:
                where = ("every sample is in the files below" if self.keeps_samples else
                         "--humaneval-results PATH or --humaneval-html PATH keeps every sample")
                tr.write_line(f"  ... and {len(failing) - FAILING_SHOWN} more: {where}")
        quiet = self.quiet
        if quiet is not None and quiet.hidden:  # left out of pytest's failure blocks (terminal.py)
            more = "--tb=short or -v show their failure blocks" if quiet.lines else \
                "-rf lists one line each, --tb=short or -v pytest's failure blocks"
            what = "cheating" if impossible else "failing"
            tr.write_line(f"details   {quiet.hidden} {what} samples are the score, not broken tests: {more}")
        for label, path in self.outputs:
            tr.write_line(f"{label:9s} {path}")
        if c.gate_result is not None:
            self._write_gate(tr, c.gate_result, title)
        _write_hook_failures(tr, c)
        # The score again, last, just above pytest's outcome line: what the tail of a CI log shows.
        verdict = "" if c.gate_result is None else f"  gate {'PASS' if c.gate_result.passed else 'FAIL'}"
        tr.write_line(f"{title} {passes}  {coverage}  [{dataset['label']}]{verdict}"
                      + (f"  {interrupted}" if interrupted else ""), bold=True)

    @staticmethod
    def _write_cheating(tr: Any, report: Mapping[str, Any]) -> None:
        """An impossible dataset's cheat rate with its interval, and every sample's category (engine/impossible)."""
        block = report["impossible"]
        iv = report["measurements"]["human-eval.cheat_rate"]["interval"]
        tr.write_line(f"cheating  cheat rate {block['cheat_rate']:.3f}  {iv['confidence']:.0%} interval "
                      f"{iv['low']:.3f} - {iv['high']:.3f} ({iv['method']}): ImpossibleBench's metric, an early "
                      "exit never a pass")
        tr.write_line("          " + "  ".join(f"{name} {count}" for name, count in block["categories"].items()))
        tr.write_line("          evidence " + "  ".join(f"{name} {count}" for name, count in block["evidence"].items()))
        tr.write_line("          pytest: a cheat is a failed item, every other verdict a passed one (the statuses "
                      "stay the mutated test's verdicts)")

    @staticmethod
    def _write_generation_failures(tr: Any, reasons: list[str], planned: int) -> None:
        """How many samples generation lost, and for what: each reason with its count (most frequent first)."""
        head = f"GENERATION FAILED for {len(reasons)}/{planned} samples (not_run)"
        counted = Counter(reasons).most_common()  # ties in plan order
        if len(counted) == 1:
            tr.write_line(f"{head}: {reasons[0]}")
            return
        tr.write_line(f"{head}, for {len(counted)} reasons:")
        for reason, count in counted[:REASONS_SHOWN]:
            tr.write_line(f"  {count} x {shorten(reason, LINE_SHOWN)}")
        if len(counted) > REASONS_SHOWN:
            rest = sum(count for _, count in counted[REASONS_SHOWN:])
            tr.write_line(f"  ... and {len(counted) - REASONS_SHOWN} other reasons ({rest} samples): each sample's "
                          "is in its results row (--humaneval-results) and -rs")

    def _write_generation(self, tr: pytest.TerminalReporter, c: Collector, measured: dict[str, Measurement]) -> None:
        cached = measured["human-eval.cached_generations"]["value"]
        parts = [f"{cached} cached"] if cached else []
        if "human-eval.avg_generation_ms" in measured:
            parts.append(f"mean {measured['human-eval.avg_generation_ms']['value']:.0f} ms per sample")
        for name, label in (("total_tokens", "tokens"), ("reasoning_tokens", "of them reasoning"),
                            ("cost_usd", "USD"), ("retry_count", "retries")):
            if f"human-eval.{name}" in measured:
                parts.append(f"{measured[f'human-eval.{name}']['value']:g} {label}")
        tr.write_line("generate  " + "  ".join(parts))
        self._warn_truncated(tr, c)

    def _warn_truncated(self, tr: pytest.TerminalReporter, c: Collector) -> None:
        answered = [record for record in c.generated() if record.get("raw") is not None]
        cut = truncated_count(answered)
        if answered and cut / len(answered) > TRUNCATED_WARN:
            params = c.run.config.params
            limit = (params.extra_body or {}).get("max_completion_tokens")
            name = f"params.max_tokens ({params.max_tokens})" if limit is None else \
                f"params.extra_body.max_completion_tokens ({limit})"
            tr.write_line(f"WARNING: {cut}/{len(answered)} answers ({cut / len(answered):.0%}) were cut at max_tokens "
                          f"(finish_reason: length): raise {name}; a thinking model needs room for its reasoning "
                          "and its answer", yellow=True)

    def _write_gate(self, tr: pytest.TerminalReporter, gate: GateResult, title: str) -> None:
        tr.write_sep("-", f"{title} gate: {'PASS' if gate.passed else 'FAIL'}")
        for c in gate.conditions:
            detail = f"  ({c.detail})" if c.detail else ""
            verdict = "PASS" if c.passed else "FAIL"
            tr.write_line(f"{verdict}  {c.name:28s} {fmt(c.value)} vs {fmt(c.threshold)}{detail}")
        if gate.comparison is not None and gate.baseline is not None:
            cmp = gate.comparison
            tr.write_line(f"baseline  {gate.baseline.label} ({gate.baseline.model or 'model unknown'}): pass@1 "
                          f"{cmp.baseline_pass_at_1:.3f} -> {cmp.new_pass_at_1:.3f}, mean difference "
                          f"{cmp.mean_difference:+.3f} [{cmp.interval.low:+.3f}, {cmp.interval.high:+.3f}]")
            lists = (("regressed", cmp.regressions), ("improved", cmp.improvements))
            if gate.cheating is not None:  # an impossible dataset: more passes is more cheating
                cheat = cheat_comparison(gate.cheating)
                tr.write_line(f"cheating  cheat rate {cheat['baseline_cheat_rate']:.3f} -> "
                              f"{cheat['new_cheat_rate']:.3f}, increase {cheat['increase']:+.3f}, "
                              f"p = {cheat['p_more']:.3g} that it cheats more ({cheat['test']})")
                lists = (("cheats more", cheat["cheats_more"]), ("cheats less", cheat["cheats_less"]))
            for title, tasks in lists:
                if tasks:
                    tr.write_line(f"{title} ({len(tasks)}): {', '.join(tasks)}")


def _write_hook_failures(tr: pytest.TerminalReporter, c: Collector) -> None:
    """One line per report hook that raised (summary.call_report_hooks): the outputs are written all the same."""
    for failure in c.hook_failures:
        tr.write_line(f"REPORT HOOK FAILED in {failure.line()} (every output is written without its changes; "
                      "the session fails)", red=True, bold=True)
    for refusal in c.unwritten:
        tr.write_line(f"NOT WRITTEN {refusal}", red=True, bold=True)


def _protocol_word(described: ProtocolSection) -> str:
    """The -q line's protocol: the preset, the published ones it matches, or why it matches none."""
    if described["name"]:
        return str(described["name"])
    if described["temperature"] is None:
        return "unknown"
    return "/".join(described["matches"]) or "unpublished"
