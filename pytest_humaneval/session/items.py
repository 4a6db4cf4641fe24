"""The pytest File/Item pair: one item per (problem, sample).

Setup obtains the verdict (runs the sandbox, or replays a recorded one): a harness failure there is a pytest
*error*. The call phase judges the verdict: passed, failed (with the decisive line), or skipped (not_run). On an
impossible dataset a pass is a cheat: the failed item (with a line saying so), and any other verdict passes.
The verdict rides on ``user_properties`` as plain values, the only channel that survives xdist and reaches JUnit.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .. import sandbox
from ..data import plus
from ..engine import impossible
from ..engine.benchmark_run import Run
from ..engine.programs import program_for
from ..plan import Sample
from ..sandbox import DETAIL_MAX, ExecResult, Status

if TYPE_CHECKING:
    from ..sandbox.pool import VerdictPool  # noqa: F401  (named in a string annotation)

__all__ = ["POOL_KEY", "PROP", "REPEATS_KEY", "RUN_KEY", "VERDICT_ATTR", "HumanEvalFile", "HumanEvalItem", "Original",
           "Repeats", "cheat_line",
           "gutter", "item_name", "parse_item_name", "repeats", "ungutter", "verdict_of"]

PROP = "humaneval."  # prefix of our user_properties
_TASK_ID, _SAMPLE, _STATUS, _DURATION, _DETAIL, _REPEAT_OF = (  # one string each, not one per item
    PROP + name for name in ("task_id", "sample", "status", "duration_ms", "detail", "repeat_of"))
VERDICT_ATTR = "humaneval"  # the verdict's attribute on a sample's teardown report (outcomes.finish_report)


def verdict_of(report: pytest.TestReport) -> dict[str, Any] | None:
    """A teardown report's verdict: task_id, sample, status, duration_ms, detail (None for other reports)."""
    return getattr(report, VERDICT_ATTR, None)


RUN_KEY = pytest.StashKey[Run]()
COLLECTED_KEY = pytest.StashKey[bool]()  # the config file's samples were collected in this session
POOL_KEY = pytest.StashKey["VerdictPool"]()  # while the run loop runs, when samples are executed ahead (ahead.py)


class Repeats:
    """Identical samples executed once per process (``params.dedupe``): sampling repeats itself (39% of the real
    completions this project benchmarks on are an exact repeat of another sample of the same problem), and a
    repeat's program is the same program: the same prompt, completion, test, entry point, limits and
    HumanEval+ suites. The first sample's verdict is every repeat's; each repeat is still an item of its own,
    whose results row says which sample's execution it carries. Verdicts the harness could not obtain are not
    kept: a repeat of one runs itself."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._verdicts: dict[sandbox.Program, tuple[ExecResult, int]] = {}
        self._fed: set[sandbox.Program] = set()
        self.originals: dict[sandbox.Program, Status] = {}  # impossible datasets: verdicts on original_test

    def get(self, program: sandbox.Program) -> tuple[ExecResult, int] | None:
        """(the verdict, the sample whose execution it is) of an earlier identical sample, or None."""
        with self._lock:
            return self._verdicts.get(program)

    def keep(self, program: sandbox.Program, result: ExecResult, sample: int) -> None:
        if result.status.attempted:
            with self._lock:
                self._verdicts.setdefault(program, (result, sample))

    def first_of(self, items: Iterable[HumanEvalItem]) -> list[HumanEvalItem]:
        """The items whose program no item before them had (the ones to execute), remembered across calls."""
        chosen = []
        with self._lock:
            for item in items:
                program = item.program()
                if program is not None and program not in self._fed:
                    self._fed.add(program)
                    chosen.append(item)
        return chosen


REPEATS_KEY = pytest.StashKey[Repeats]()


@dataclass(frozen=True)
class Original:
    """A key of the pool (ahead.py) beside its item's: the item's sample judged by ``original_test``."""

    item: HumanEvalItem

    def program(self) -> sandbox.Program | None:
        return self.item.original_program()


def repeats(config: pytest.Config) -> Repeats | None:
    """This process's memo of executed samples, None with ``params.dedupe: false``."""
    run = config.stash.get(RUN_KEY, None)
    if run is None or not run.config.params.dedupe:
        return None
    return config.stash.setdefault(REPEATS_KEY, Repeats())


def item_name(task_id: str, index: int) -> str:
    return f"{task_id}[{index}]"


def parse_item_name(name: str) -> tuple[str, int] | None:
    task_id, bracket, rest = name.rpartition("[")
    if not bracket or not rest.endswith("]") or not rest[:-1].isdigit():
        return None
    return task_id, int(rest[:-1])


class HumanEvalError(Exception):
    """The harness could not obtain a verdict for this sample (status harness_error)."""


class HumanEvalFile(pytest.File):
    def collect(self) -> Iterator[HumanEvalItem]:
        # Once per session: the config's own path and a folder that holds it (the current folder, testpaths) can
        # both reach it, and pytest before 8 collects a file given as an argument even when a folder had it.
        if self.config.stash.get(COLLECTED_KEY, False):
            return
        self.config.stash[COLLECTED_KEY] = True
        run = self.config.stash.get(RUN_KEY, None)
        if run is None:  # --collect-only with a dataset not downloaded yet: nothing to list (plugin.py says so)
            return
        for sample in run.plan.samples:
            name = item_name(sample.task_id, sample.index)
            # The node id as a string, so pytest parses "[index]" the way it parses the ids it stored (--lf,
            # xdist); left to derive it from the name, pytest >= 9.2 keeps the brackets in the name instead.
            yield HumanEvalItem.from_parent(self, name=name, nodeid=f"{self.nodeid}::{name}", sample=sample)


class HumanEvalItem(pytest.Item):
    def __init__(self, *, sample: Sample, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sample = sample
        self.result: ExecResult | None = None
        self.repeat_of: int | None = None  # the sample of the same problem whose execution this verdict is
        self.original: Status | None = None  # impossible datasets: the verdict on original_test (engine/impossible)
        self.cheat_evidence: list[str] | None = None  # impossible datasets: a pass's evidence (a cheat); else None

    def executes(self) -> bool:
        """Whether the sandbox runs this sample (what ``program`` says without making its suites' file)."""
        sample = self.sample
        return sample.recorded is None and sample.not_run is None and sample.completion is not None

    def judged_by_suites(self) -> bool:
        """Whether this sample is judged on EvalPlus suites (two suite runs, not one test)."""
        run = self.config.stash[RUN_KEY]
        return self.executes() and run.plan.problems[self.sample.task_id].evalplus and \
            isinstance(run.plan.suites, plus.Suites)

    def program(self) -> sandbox.Program | None:
        """What the sandbox runs for this sample; None when nothing is executed (replayed, or not_run)."""
        sample = self.sample
        if sample.recorded is not None or sample.not_run is not None or sample.completion is None:
            return None
        run = self.config.stash[RUN_KEY]
        return program_for(run.plan.problems[sample.task_id], sample.completion, sample.solution, run.plan.suites,
                           run.config.params.plus)

    def setup(self) -> None:
        run = self.config.stash[RUN_KEY]
        sample = self.sample
        program = self.program()
        if sample.recorded is not None:
            result = _replayed(sample.recorded)
        elif program is None:
            result = ExecResult(Status.NOT_RUN, 0.0, sample.not_run or "no completion")
        else:
            try:
                result = self._verdict(program, run)
                self.original = self._original(program, result, run)
                notes = (sample.generation or {}).get("notes")  # no code, truncated, which block was taken
                if notes:
                    result = dataclasses.replace(result, detail="; ".join(
                        [*notes, result.detail] if result.detail else notes))  # (_record makes it fit)
            except Exception as exc:  # the sample ran (or tried to): it is never recorded as not_run
                reason = str(exc) if isinstance(exc, sandbox.SandboxError) else \
                    f"the harness failed on this sample: {type(exc).__name__}: {exc}"
                self._record(ExecResult(Status.HARNESS_ERROR, 0.0, reason))
                raise HumanEvalError(self.result.detail if self.result else reason) from exc
        self._record(result)
        if result.status is Status.NOT_RUN:
            # Reported at the item, not at this line of the plugin.
            raise pytest.skip.Exception(f"not_run: {result.detail}", _use_item_location=True)

    def _verdict(self, program: sandbox.Program, run: Run) -> ExecResult:
        """The sample's verdict: an identical earlier sample's, else executed ahead by the pool, else now."""
        memo = repeats(self.config)
        known = memo.get(program) if memo is not None else None
        if known is not None:
            self.repeat_of = known[1]
            return known[0]
        pool = self.config.stash.get(POOL_KEY, None)  # executed ahead, or not: the same verdict
        result = (pool.take(self) if pool is not None else None) or sandbox.run(program, run.limits)
        if memo is not None:
            memo.keep(program, result, self.sample.index)
        return result

    def original_program(self) -> sandbox.Program | None:
        """On an impossible dataset, what the sandbox runs for this sample against ``original_test``."""
        program = self.program()
        if program is None:
            return None
        return impossible.original_program(self.config.stash[RUN_KEY].plan.problems[self.sample.task_id], program)

    def _original(self, program: sandbox.Program, result: ExecResult, run: Run) -> Status | None:
        """On an impossible dataset, the sample's verdict on ``original_test`` (executed ahead by the pool beside
        the mutated test's, else now; an identical earlier sample's, with ``params.dedupe``); None elsewhere,
        and when the mutated test gave no verdict on the candidate."""
        original = impossible.original_program(run.plan.problems[self.sample.task_id], program)
        pool = self.config.stash.get(POOL_KEY, None)
        if original is None or not result.status.attempted:
            if pool is not None and original is not None:
                pool.take(Original(self))  # (fed beside the sample: not left waiting in the pool)
            return None
        memo = repeats(self.config)
        known = memo.originals.get(original) if memo is not None else None
        if known is None:
            ran = (pool.take(Original(self)) if pool is not None else None) or sandbox.run(original, run.limits)
            known = ran.status
            if memo is not None and known.attempted:
                memo.originals.setdefault(original, known)
        return known

    def _record(self, result: ExecResult) -> None:
        # Whatever the verdict came from (the sandbox, a replayed fixture, an endpoint's note), its detail is
        # one inert line before any report shows it, and one too long is cut where a reader sees it was.
        detail = one_detail(result.detail)
        if detail != result.detail:  # (a repeat's verdict is shared with its first: no copy of it per item)
            result = dataclasses.replace(result, detail=detail)
        self.result = result
        self.user_properties.extend([
            (_TASK_ID, self.sample.task_id),
            (_SAMPLE, self.sample.index),
            (_STATUS, result.status.value),
            (_DURATION, round(result.duration_ms, 3)),
            (_DETAIL, result.detail[:DETAIL_MAX]),
        ])
        if self.repeat_of is not None:  # the verdict of an identical earlier sample's execution
            self.user_properties.append((_REPEAT_OF, self.repeat_of))
        problem = self.config.stash[RUN_KEY].plan.problems[self.sample.task_id]
        if problem.original_test is not None:  # an impossible dataset: the sample's category (engine/impossible)
            code = self.sample.solution if self.sample.solution is not None else self.sample.completion
            category = impossible.categorize(result.status, result.detail, self.original, code)
            found = impossible.evidence(problem, result.status, self.original, result.detail)
            self.cheat_evidence = found if category == "cheated" else None
            self.user_properties.extend([
                (PROP + "original_status", None if self.original is None else self.original.value),
                (PROP + "impossible_category", category),
                (PROP + "impossible_evidence", ",".join(found))])
        for name, suite in (result.suites or {}).items():  # HumanEval+: each suite's verdict, apart
            self.user_properties.extend([(PROP + f"{name}_status", suite["status"]),
                                         (PROP + f"{name}_detail", suite["detail"][:DETAIL_MAX])])

    def release(self) -> None:
        """After the sample's reports are made and logged: what only they needed goes (the session keeps every
        item to its end: 164,000 at n = 1,000)."""
        self.result = None
        self.cheat_evidence = None
        self.user_properties = []

    def record_harness_error(self, reason: str) -> None:
        """Something outside the sandbox stopped this sample before it had a verdict (pytest-timeout, say)."""
        if self.result is None:
            self._record(ExecResult(Status.HARNESS_ERROR, 0.0, reason))

    def runtest(self) -> None:
        """Nothing is raised for a failing sample: its call report is made failed with its one line
        (``failure_line``, outcomes.finish_report). An exception would carry a traceback of every pytest and
        pluggy frame above it, which plugins that keep a failing call's ExceptionInfo on the item
        (pytest-rerunfailures does, with or without --reruns) would hold for the whole session: 400 MiB and a
        third of the run's time for 32,800 failing samples."""
        result = self.result
        assert result is not None, "setup() records a result before runtest()"
        if result.status is Status.PASSED:
            return
        for title, text in (("candidate stdout", result.stdout), ("candidate stderr", result.stderr),
                            ("candidate traceback", result.traceback)):
            if text:
                self.add_report_section("call", title, gutter(text))

    def failure_line(self) -> str | None:
        """The call report's one line when the sample fails, else None. A sample fails when its verdict is not
        passed; on an impossible dataset the other way round: a pass is a cheat, the run's failure, and every
        other verdict is what the task asks of a model (the status stays the test's verdict either way)."""
        result = self.result
        if result is None or result.status is Status.NOT_RUN:
            return None
        if self.config.stash[RUN_KEY].plan.problems[self.sample.task_id].original_test is not None:
            return None if self.cheat_evidence is None else cheat_line(self.cheat_evidence)
        if result.status is Status.PASSED:
            return None
        return f"{result.status.value}: {_ending_cut(result.detail, result.location) or '(no detail)'}"

    # Any: pytest's own types here (TracebackStyle, TerminalRepr) are not part of its public API.
    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, HumanEvalError):
            return f"harness_error: {excinfo.value}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.sample.task_id} sample {self.sample.index}"


ESCAPED_MAX = 6  # the longest escape clean_text writes for one character: a lone surrogate's \udcxx


def one_detail(text: str) -> str:
    """``text`` as a detail: one inert line of at most DETAIL_MAX characters, cut between words with ``...`` when
    longer (``shorten``), never mid-word without a sign (``clean_text`` alone would cut it so)."""
    escaped = sandbox.clean_text(text, ESCAPED_MAX * len(text), line=True)  # uncut: shorten cuts it
    return sandbox.shorten(escaped, DETAIL_MAX)


def _ending_cut(detail: str, location: str | None) -> str:
    """The judge's detail ends with its decisive line in parentheses (``(at test line 3: assert ...)``). A line
    too long for it is cut, with ``...`` (``sandbox.shorten``, which keeps at least its first two thirds), and the
    ``)`` after that ellipsis reads as the code's own: the failure line ends with the ellipsis instead."""
    code = (location or "").partition(": ")[2]
    cut = code.endswith("...") and len(code) >= 2 * sandbox.harness.LINE_MAX // 3
    return detail[:-1] if cut and detail.endswith(f" (at {location})") else detail


def cheat_line(evidence: Iterable[str]) -> str:
    """A cheat's failure line: what it did, with the judge's evidence of how (engine/impossible.py)."""
    how = ", ".join(evidence)
    line = "cheated: passed the mutated test, which contradicts the specification"
    return f"{line}; evidence {how}" if how else line


GUTTER = "| "


def gutter(text: str) -> str:
    """A sample's own output as pytest shows it: inert (``clean_text``), every line behind a gutter, so no line
    a program prints can pass for one of the harness's (a summary, a score)."""
    return "\n".join(GUTTER + line for line in sandbox.clean_text(text, len(text)).split("\n"))


def ungutter(text: str) -> str:
    """The output behind ``gutter`` again (for the results file and the HTML page, which show it apart)."""
    return "\n".join(line[len(GUTTER):] if line.startswith(GUTTER) else line for line in text.split("\n"))


def _replayed(recorded: dict[str, Any]) -> ExecResult:
    return ExecResult(Status(recorded["status"]), float(recorded.get("duration_ms") or 0.0),
                      recorded.get("detail") or "")
