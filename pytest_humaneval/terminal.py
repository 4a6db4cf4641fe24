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

from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["SAMPLE_ATTR", "QuietSamples", "mark_sample"]

SAMPLE_ATTR = "humaneval_sample"  # on every report of a sample's item (a report's attributes cross xdist)
DEFAULT_TBSTYLE = "auto"
DEFAULT_REPORTCHARS = "fE"  # pytest's default for -r since 6.0
HIDDEN_STATS = ("failed", "error")


def mark_sample(report: pytest.TestReport) -> None:
    setattr(report, SAMPLE_ATTR, True)


def _is_sample(report: Any) -> bool:
    return getattr(report, SAMPLE_ATTR, False)


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

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)  # outside the terminal reporter's own wrapper
    def pytest_terminal_summary(self, terminalreporter: Any) -> Iterator[None]:
        if not self.blocks:
            self._leave_out(terminalreporter.stats)
        try:
            yield
        finally:
            self._put_back()

    def register(self, pluginmanager: pytest.PytestPluginManager) -> None:
        pluginmanager.register(self, "humaneval-quiet")
        pluginmanager.register(_LinesBack(self), "humaneval-quiet-lines")

    def _leave_out(self, stats: dict[str, list[Any]]) -> None:
        hidden: set[int] = set()
        for key in HIDDEN_STATS:
            reports = stats.get(key)
            if reports:
                self._kept[key] = reports
                stats[key] = [report for report in reports if not _is_sample(report)]
                hidden.update(report.nodeid for report in reports if _is_sample(report))
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
