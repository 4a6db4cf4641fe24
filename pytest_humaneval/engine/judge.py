"""The judge: every verdict of the package is decided here, whoever asks (the pytest items, the ``Verifier`` and the
trainers' adapters over it). No pytest import.

``judge.verdict(sample) -> Verdict`` is its one call; ``judge.feed(samples)`` tells it which samples come next, so
its pool of warm sandboxes runs them ahead while the caller does something else. Its rules, keyed by the sample's
key:

- **the program**: what the sandbox runs for a sample (``programs.program_for``); a sample with none is not_run
  (its reason), and one recorded in the mock fixture is replayed, never executed;
- **identical samples** (``dedupe``): a repeat of a sample judged before (the same program: prompt, completion,
  test, limits, suites) takes that sample's verdict and says whose (``repeat_of``); it is not fed to the pool. A
  verdict the harness could not obtain is not remembered: a repeat of it runs itself. ``memo_max`` bounds what is
  remembered (oldest first), for a stream that never ends;
- **the original test** of an impossible dataset: each sample also runs against HumanEval's ``original_test``, fed
  beside it, and its verdict there decides the category (``impossible.py``);
- **where a verdict comes from**: the pool ran it ahead (fed), or it runs when asked (not fed, or fed where the
  pool does not hold it any more); a harness failure is a harness_error with its reason, never a verdict on the
  candidate.

The judge owns its sandboxes (``Sandboxes``: a first one, and a pool of warm ones beside it once asked to run
ahead); ``Judge(pool=...)`` takes anything with the ``Pool`` methods instead (a fake that starts no process, for
the rules' unit tests).
"""

from __future__ import annotations

import copy
import itertools
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from .. import sandbox
from ..config import PlusParams, RunConfig
from ..data import plus as evalplus
from ..data.dataset import Problem
from ..plan import Plan, Sample
from ..sandbox import ExecResult, Limits, Program, SandboxError, Status
from ..sandbox.pool import VerdictPool
from . import impossible
from .programs import expected_cost, program_for
from .sandboxes import start_pool
from .verdict import Verdict, one_detail

__all__ = ["Cancelled", "Judge", "Pool", "SandboxError", "Sandboxes", "Work"]

Work = tuple[Hashable, Program, float]  # a sample fed to a pool: its key, its program, its expected cost (s)
_Known = tuple[ExecResult, int, "Status | None"]  # a remembered execution: its result, its sample, its original's


class Cancelled(Exception):
    """The caller went away while it waited for a verdict (its cancel event was set): the sample is let go."""


class Pool(Protocol):
    """What runs a judge's samples: ``Sandboxes``, or a fake."""

    @property
    def window(self) -> int:
        """How far ahead of the verdicts asked for the pool runs fed samples (0: it runs none ahead)."""

    @property
    def reach(self) -> int:
        """How far ahead it may run while a sample has stalled: how many samples are worth feeding at once."""

    def feed(self, work: Iterable[Work]) -> None:
        """Samples to run ahead, in the order their verdicts will be asked for; keys already fed are skipped."""

    def take(self, key: Hashable, cancel: threading.Event | None = None) -> ExecResult | None:
        """The fed sample's result, waiting for it (raising what running it raised); None when the pool does not
        hold it, or when ``cancel`` is set while it waits."""

    def run(self, program: Program) -> ExecResult:
        """Run a program now (a sample the pool does not hold)."""

    def discard(self, keys: Iterable[Hashable]) -> None:
        """Let fed samples go: one not started never starts, one judged is forgotten."""


class Sandboxes:
    """A judge's own sandboxes: the first one (started by ``start``, else on first use), which runs a sample when
    it is asked for, and, once asked (``run_ahead``), a pool of warm ones beside it (``pool.VerdictPool``) that
    runs fed samples ahead, in order, until ``stop_ahead``."""

    def __init__(self, isolation: str, limits: Limits) -> None:
        self.first = sandbox.Sandbox(isolation)
        self.limits = limits
        self.ahead: VerdictPool | None = None
        self.programs: dict[Hashable, Program] = {}  # fed and not yet taken: what the pool reads
        self.costs: dict[Hashable, float] = {}  # (those with an expected cost)

    def start(self, wait: bool = True) -> sandbox.Sandbox:
        """Start the first sandbox (see ``Sandbox.start``); raises ``SandboxError`` when it cannot start."""
        return self.first.start(wait)

    def run_ahead(self, size: int, forget: bool = False) -> VerdictPool:
        """Start a pool of ``size`` sandboxes (the first one among them) that runs fed samples ahead; ``forget``:
        one that outlives a run (see ``VerdictPool``). Raises ``SandboxError`` when the first cannot start."""
        programs, costs = self.programs, self.costs  # the pool reads these dicts, never this object or its owner
        self.ahead = start_pool(self.first, size, self.limits, programs.__getitem__,
                                lambda key: costs.get(key, 0.0), forget=forget)
        return self.ahead

    @property
    def window(self) -> int:
        return self.ahead.window if self.ahead is not None else 0

    @property
    def reach(self) -> int:
        return self.ahead.reach if self.ahead is not None else 0

    def feed(self, work: Iterable[Work]) -> None:
        ahead = self.ahead
        if ahead is None:
            return
        keys = []
        for key, program, cost in work:
            if key not in self.programs:
                self.programs[key] = program
                if cost:
                    self.costs[key] = cost
                keys.append(key)
        ahead.feed(keys)

    def take(self, key: Hashable, cancel: threading.Event | None = None) -> ExecResult | None:
        ahead = self.ahead
        if ahead is None:
            return None
        try:
            return ahead.take(key, cancel)
        finally:
            self.programs.pop(key, None)
            self.costs.pop(key, None)

    def run(self, program: Program) -> ExecResult:
        return self.first.run(program, self.limits)

    def discard(self, keys: Iterable[Hashable]) -> None:
        keys = list(keys)
        if self.ahead is not None:
            self.ahead.discard(keys)
        for key in keys:
            self.programs.pop(key, None)
            self.costs.pop(key, None)

    def stop_ahead(self) -> None:
        """Stop the pool: nothing more starts, and every sandbox of it is closed (the first one too) when this
        returns. Under namespaces a killed supervisor takes all its samples' processes with it (its PID
        namespace), so the samples in flight are killed at once, not waited for."""
        ahead, self.ahead = self.ahead, None
        if ahead is not None:
            ahead.close(abandon=self.first.isolation.startswith("namespaces"))
        self.programs.clear()
        self.costs.clear()

    def close(self) -> None:
        self.stop_ahead()
        self.first.close()


class Judge:
    """The verdicts of one dataset's samples (``problems``, with ``suites`` for an EvalPlus dataset), under
    ``limits``. Thread-safe. ``outputs``: keep what each candidate printed and raised in its verdict (the pytest
    items show a failing sample's; a library call keeps none). ``closed_detail``: a sample asked for once the judge
    is closed gets it as its harness_error's detail."""

    def __init__(self, problems: Mapping[str, Problem], suites: Mapping[str, Any] | None = None,
                 limits: Limits | None = None, *, plus: PlusParams | None = None, dedupe: bool = True,
                 memo_max: int | None = None, outputs: bool = True, isolation: str = "auto",
                 pool: Pool | None = None,
                 closed_detail: str = "the judge was closed before this sample ran") -> None:
        self.problems = problems
        self.suites: Mapping[str, Any] = suites if suites is not None else {}
        self.limits = limits if limits is not None else Limits()
        self.plus = plus
        self.dedupe = dedupe
        self.outputs = outputs
        self.sandboxes = Sandboxes(isolation, self.limits) if pool is None else None
        self.pool: Pool = pool if pool is not None else self.sandboxes  # type: ignore[assignment]
        self.closed = False
        self._closed_detail = closed_detail
        self._memo_max = memo_max
        self._memo: OrderedDict[Program, _Known] = OrderedDict()
        self._inflight: dict[Program, Hashable] = {}  # fed, not yet judged: a program's first sample's key
        self._lock = threading.Lock()
        self._scope: int | None = None  # a scoped judge's keys carry it: its samples share the pool with others'
        self._scopes = itertools.count()
        self._root = self

    @classmethod
    def of(cls, config: RunConfig, plan: Plan, isolation: str | None = None) -> Judge:
        """The judge of a run's plan, under its config's limits and rules (``isolation``: the config's, unless
        given)."""
        params = config.params
        return cls(plan.problems, plan.suites, Limits(timeout_s=params.timeout_s, memory_mb=params.memory_mb),
                   plus=params.plus, dedupe=params.dedupe, isolation=isolation or params.isolation)

    def scoped(self) -> Judge:
        """A judge of its own memo over the same sandboxes: identical samples of one library call are judged once,
        and calls made at the same time, from several threads, share the sandboxes and nothing else."""
        other = copy.copy(self)
        other._memo, other._inflight, other._lock = OrderedDict(), {}, threading.Lock()
        other._scope = next(self._root._scopes)
        return other

    # -- the rules of a sample
    def program(self, sample: Sample) -> Program | None:
        """What the sandbox runs for ``sample``; None when nothing is executed (replayed, or not run)."""
        if sample.recorded is not None or sample.not_run is not None or sample.completion is None:
            return None
        return program_for(self.problems[sample.task_id], sample.completion, sample.solution, self.suites, self.plus)

    def executes(self, sample: Sample) -> bool:
        """Whether a sandbox runs ``sample`` (what ``program`` says without building it)."""
        return sample.recorded is None and sample.not_run is None and sample.completion is not None

    def by_suites(self, sample: Sample) -> bool:
        """Whether ``sample`` is judged on EvalPlus suites (two suite runs, not one test)."""
        return self.executes(sample) and self.problems[sample.task_id].evalplus and \
            isinstance(self.suites, evalplus.Suites)

    def runs(self, sample: Sample) -> int:
        """How many spans of up to ``timeout_s`` judging ``sample`` may take: a standard-input problem's tests (each
        a candidate of its own), a functional problem's (each a call); else one."""
        return max(1, self.problems[sample.task_id].io_tests) if self.executes(sample) else 1

    # -- the calls
    def feed(self, samples: Iterable[Sample]) -> None:
        """``samples`` are asked for next, in this order: the pool runs them ahead (the first of identical ones
        only, with its original test beside it on an impossible dataset). Nothing when the pool runs none ahead."""
        if not self.pool.window:
            return
        work: list[Work] = []
        with self._lock:
            for sample in samples:
                program = self.program(sample)
                if program is None:
                    continue
                key = self._key(sample)
                if self.dedupe:
                    if program in self._inflight or program in self._memo:
                        continue  # its verdict will be the first one's
                    self._inflight[program] = key
                problem = self.problems[sample.task_id]
                cost = expected_cost(problem, self.suites)
                work.append((key, program, cost))
                original = impossible.original_program(problem, program)
                if original is not None:  # side by side in the pool
                    work.append(((key, "original"), original, cost))
        self.pool.feed(work)

    def verdict(self, sample: Sample, cancel: threading.Event | None = None) -> Verdict:
        """``sample``'s verdict. A harness failure is its harness_error, with what failed; ``cancel`` set while it
        waits raises ``Cancelled``."""
        if sample.recorded is not None:
            return self._verdict(sample, _replayed(sample.recorded))
        try:
            program = self.program(sample)
            if program is None:
                return self._verdict(sample, ExecResult(Status.NOT_RUN, 0.0, sample.not_run or "no completion"))
            result, repeat_of, original = self._judged(sample, program, cancel)
            notes = sample.generation.get("notes") if sample.generation else None  # no code, truncated, ...
            if notes:
                result = replace(result, detail="; ".join([*notes, result.detail] if result.detail else notes))
        except Cancelled:
            raise
        except Exception as exc:  # the sample ran (or tried to): never recorded as not_run, never a 0
            reason = str(exc) if isinstance(exc, SandboxError) else \
                f"the harness failed on this sample: {type(exc).__name__}: {exc}"
            return self.harness_error(sample, reason)
        return self._verdict(sample, result, repeat_of, original)

    def harness_error(self, sample: Sample, reason: str) -> Verdict:
        """``sample``'s verdict when something stopped the harness before it had one (pytest-timeout, say)."""
        return self._verdict(sample, ExecResult(Status.HARNESS_ERROR, 0.0, reason))

    def discard(self, samples: Iterable[Sample]) -> None:
        """Let go the samples fed and no longer asked for (a stream its reader dropped): run or not, nothing of them
        stays."""
        keys: list[Hashable] = []
        with self._lock:
            for sample in samples:
                key = self._key(sample)
                keys += [key, (key, "original")]
                program = self.program(sample)
                if program is not None and self._inflight.get(program) == key:
                    del self._inflight[program]
        self.pool.discard(keys)

    def close(self) -> None:
        """Stop the sandboxes; a verdict asked for after this is a harness_error (``closed_detail``)."""
        self._root.closed = True
        if self._root.sandboxes is not None:
            self._root.sandboxes.close()

    # -- inside
    def _key(self, sample: Sample) -> Hashable:
        return sample.key if self._scope is None else (self._scope, sample.index)

    def _judged(self, sample: Sample, program: Program,
                cancel: threading.Event | None) -> tuple[ExecResult, int | None, Status | None]:
        """(the result, the sample whose execution it is when not this one's, the verdict on original_test)."""
        original = impossible.original_program(self.problems[sample.task_id], program)
        key = self._key(sample)
        if self.dedupe:
            known = self._recall(program)
            if known is not None:
                result, first, on_original = known
                if original is not None and on_original is None:  # not known: run now
                    on_original = _attempted(self._take((key, "original"), original, cancel).status)
                    self._remember(program, result, first, on_original)
                return result, first, on_original
        try:
            result = self._take(key, program, cancel)
            if self.dedupe:
                self._remember(program, result, sample.index)
            if original is None:
                return result, None, None
            if not result.status.attempted:  # no verdict on the candidate: its original is not wanted
                self.pool.discard([(key, "original")])
                return result, None, None
            on_original = _attempted(self._take((key, "original"), original, cancel).status)
            if self.dedupe:
                self._remember(program, result, sample.index, on_original)
            return result, None, on_original
        finally:
            if self.dedupe:
                with self._lock:
                    if self._inflight.get(program) == key:
                        del self._inflight[program]

    def _take(self, key: Hashable, program: Program, cancel: threading.Event | None) -> ExecResult:
        """The result of ``key``'s sample: the pool's, else run now."""
        result = None if self._root.closed else self.pool.take(key, cancel)
        if result is None:
            if cancel is not None and cancel.is_set():
                self.pool.discard([(key, "original")])  # its pair, if it has one, is let go with it
                raise Cancelled
            if self._root.closed:
                return ExecResult(Status.HARNESS_ERROR, 0.0, self._closed_detail)
            result = self.pool.run(program)
        return result

    def _recall(self, program: Program) -> _Known | None:
        with self._lock:
            known = self._memo.get(program)
            if known is not None:
                self._memo.move_to_end(program)
            return known

    def _remember(self, program: Program, result: ExecResult, index: int, original: Status | None = None) -> None:
        """Keep an execution for the repeats of ``program`` (only a verdict on the candidate)."""
        if not result.status.attempted:
            return
        with self._lock:
            known = self._memo.get(program)
            if known is None or known[1] == index:
                self._memo[program] = (result, index, original)
                if self._memo_max is not None and len(self._memo) > self._memo_max:
                    self._memo.popitem(last=False)

    def _verdict(self, sample: Sample, result: ExecResult, repeat_of: int | None = None,
                 original: Status | None = None) -> Verdict:
        """The verdict as every front reports it: one inert detail line, each suite's status and first failing
        input, an impossible task's category and evidence."""
        problem = self.problems.get(sample.task_id)
        detail = one_detail(result.detail)
        suites = result.suites or {}
        base, extra = suites.get("base"), suites.get("plus")
        category: str | None = None
        evidence: tuple[str, ...] = ()
        impossible_task = problem is not None and problem.original_test is not None
        if impossible_task:
            assert problem is not None
            code = sample.solution if sample.solution is not None else sample.completion
            category = impossible.categorize(result.status, detail, original, code)
            evidence = tuple(impossible.evidence(problem, result.status, original, detail))
        outputs = self.outputs
        return Verdict(sample.index, sample.task_id, result.status, detail, round(result.duration_ms, 3),
                       Status(base["status"]) if base else None, Status(extra["status"]) if extra else None,
                       repeat_of, original, category, evidence, base["detail"] if base else None,
                       extra["detail"] if extra else None, impossible_task, result.location if outputs else None,
                       result.stdout if outputs else "", result.stderr if outputs else "",
                       result.traceback if outputs else "")


def _attempted(status: Status) -> Status | None:
    return status if status.attempted else None


def _replayed(recorded: Mapping[str, Any]) -> ExecResult:
    """A verdict recorded in the mock fixture, as it was recorded."""
    return ExecResult(Status(recorded["status"]), float(recorded.get("duration_ms") or 0.0),
                      recorded.get("detail") or "")
