"""``Verifier``: the harness's judge as a library, for scripts, RL trainers' reward functions and runs of millions of
samples. No pytest import.

    from pytest_humaneval import Verifier
    with Verifier("humanevalplus") as verifier:
        verdicts = verifier.verify([(task_id, code), ...])   # a Verdict per sample, in the order given

The same samples, the same verdicts as a pytest run: a sample's program is built by the rules the pytest items use
(``programs.program_for``), it runs in the same sandboxes (a pool of warm ones, one per usable CPU), under the same
limits and isolation, and identical samples in one call are executed once (``dedupe``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import os
import threading
import warnings
import weakref
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from .. import sandbox
from ..completions.sources import open_dataset
from ..config import ConfigError, RunConfig, config_from_mapping
from ..data import plus as evalplus
from ..data.dataset import DatasetError, Problem
from ..sandbox import DETAIL_MAX, ExecResult, Status
from ..sandbox.pool import VerdictPool, pool_size
from . import impossible
from .programs import code_of_row, expected_cost, program_for
from .sandboxes import start_pool

__all__ = ["SampleInput", "Verdict", "Verifier", "VerifierError"]

# A sample as ``verify`` takes it: ``(task_id, completion)``, or a mapping with ``task_id`` and ``completion`` (the
# code appended to the prompt) or ``solution`` (the whole program).
SampleInput: TypeAlias = "Sequence[Any] | Mapping[str, Any]"
LOG = logging.getLogger("pytest_humaneval")
MEMO_MAX = 4096  # identical samples remembered per call: a stream's memory stays flat
_Known: TypeAlias = "tuple[ExecResult, int, Status | None]"  # a memo's verdict, its sample, its original verdict


class VerifierError(ValueError):
    """A bad argument or sample: one line naming it, what was expected and what was found."""


class _Cancelled(Exception):
    """The call's caller went away (its task was cancelled, Ctrl-C): the call stops and lets its samples go."""


@dataclass
class _Life:
    """What the Verifier's finalizer needs to know (it may not hold the Verifier itself)."""

    owner: int  # the process that made it: only there are its sandboxes its own
    kept: bool = False  # kept for the process's life on purpose (rewards.verifier_for): closed at exit, quietly


@dataclass(frozen=True)
class Verdict:
    """One sample's verdict. ``status`` is one of the plugin's statuses (``Status``, a ``str``): passed,
    assertion_failed, runtime_error, timeout (the candidate's doing), not_run (no code) and harness_error (the
    harness failed, not the candidate). ``reward`` is 1.0 or 0.0 for a verdict on the candidate, and None for
    not_run and harness_error: an infrastructure failure is never a silent 0."""

    index: int  # the sample's position in the input
    task_id: str
    status: Status
    detail: str  # why, with the decisive line: "assertion_failed: ... (at test line 3: assert ...)"
    duration_ms: float  # the sandbox's wall time for the sample (its repeat's: the first one's)
    base_status: Status | None = None  # EvalPlus datasets: each suite's verdict (status: both passed)
    plus_status: Status | None = None
    repeat_of: int | None = None  # an identical earlier sample of the same call whose execution this is
    # Impossible datasets (engine/impossible.py): the verdict on original_test, the category, a pass's evidence
    original_status: Status | None = None
    impossible_category: str | None = None
    impossible_evidence: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    @property
    def reward(self) -> float | None:
        if not self.status.attempted:
            return None
        return 1.0 if self.passed else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain values (for JSON): every field, and ``passed`` and ``reward``."""
        data = dataclasses.asdict(self)
        data.update(status=self.status.value, passed=self.passed, reward=self.reward,
                    base_status=None if self.base_status is None else self.base_status.value,
                    plus_status=None if self.plus_status is None else self.plus_status.value,
                    original_status=None if self.original_status is None else self.original_status.value,
                    impossible_evidence=list(self.impossible_evidence))
        return data


@dataclass
class _Entry:
    index: int
    task_id: str
    program: sandbox.Program | None = None
    key: Hashable | None = None  # fed to the pool; None: a repeat of an earlier sample, or no program
    ready: Verdict | None = None  # known without the sandbox (not_run)
    original: sandbox.Program | None = None  # impossible datasets: the sample judged by original_test
    code: str | None = None  # what the sample brings (for the category)
    problem: Problem | None = None


class Verifier:
    """A dataset's judge, with its pool of sandboxes started once and kept until ``close`` (or the ``with``
    block's end): create one per process and call it for every batch. Thread-safe; ``verify``, ``stream``,
    ``averify`` and ``astream`` may be called from several threads at once (they share the pool).

    ``dataset``: any name or file a config's ``dataset:`` takes (``humaneval``, ``humanevalplus``,
    ``humanevalplus-mini``, ``mbppplus``, ``humaneval-impossible-oneoff``... or a JSONL(.gz) path).
    ``isolation``, ``timeout_s``, ``memory_mb``, ``workers`` (sandboxes; default: the usable CPUs; one in the basic
    sandbox, ``sandbox.harness.BASIC_ALONE``), ``dedupe``,
    ``plus`` (EvalPlus's time limits: ``{"min_time_limit_s": 4.0, "time_limit_factor": 4.0}``) and
    ``impossible_instruction`` (an impossible dataset's instruction) are the config keys of the same names under
    ``params:`` (docs/configuration.md), with the same defaults and checks. ``auto`` never ends in the basic
    sandbox (where a candidate reads what the caller can read) unless ``allow_basic``: it raises instead; the
    isolation applied is ``isolation``, logged, and warned about when it is basic. ``progress(text, final=False)`` hears
    about a first use of an EvalPlus dataset (its expected outputs computed once into the user cache)."""

    def __init__(self, dataset: str | os.PathLike[str] = "humaneval", *, isolation: str = "auto",
                 timeout_s: float = 3.0, memory_mb: int = 2048, workers: int | None = None, dedupe: bool = True,
                 plus: Mapping[str, float] | None = None, impossible_instruction: str | None = None,
                 progress: Callable[..., None] | None = None, allow_basic: bool = False) -> None:
        if not isinstance(dataset, (str, os.PathLike)):
            raise VerifierError(f"Verifier: dataset: expected a dataset's name or a file's path, found "
                                f"{type(dataset).__name__}")
        if plus is not None and not isinstance(plus, Mapping):
            raise VerifierError(f"Verifier: plus: expected a mapping of EvalPlus's time limits, found "
                                f"{type(plus).__name__}")
        params: dict[str, Any] = {"execute": True, "isolation": isolation, "timeout_s": timeout_s,
                                  "memory_mb": memory_mb, "workers": workers, "dedupe": dedupe,
                                  "impossible_instruction": impossible_instruction}
        if plus is not None:
            params["plus"] = dict(plus)
        self.config = _config({"target": {"mode": "mock"}, "dataset": os.fspath(dataset), "params": params})
        try:
            loaded, _, _ = open_dataset(self.config, progress)
        except (ConfigError, DatasetError) as exc:
            raise VerifierError(_named(str(exc), self.config.path)) from None
        self.dataset = loaded.name
        self.problems: dict[str, Problem] = {problem.task_id: problem for problem in loaded.problems}
        self._suites: Mapping[str, bytes] = {}
        if loaded.evalplus:
            suites = evalplus.Suites(loaded.sha256, loaded.problems)
            suites.ensure(progress)  # once per dataset, Python and machine; then read from the user cache
            self._suites = suites
        self.limits = sandbox.Limits(timeout_s=self.config.params.timeout_s, memory_mb=self.config.params.memory_mb)
        # fed keys: their program and cost (the pool reads it, not the Verifier: a Verifier nobody holds any more is
        # collected, and its finalizer closes the pool)
        programs: dict[Hashable, tuple[sandbox.Program, float]] = {}
        self._programs = programs
        self._calls = itertools.count()
        self._owner = os.getpid()
        self._lock = threading.Lock()
        self._closed = False
        first = sandbox.Sandbox(self.config.params.isolation)
        try:
            self._pool: VerdictPool = start_pool(first, max(1, pool_size(self.config.params.workers, False)),
                                                 self.limits, lambda key: programs[key][0],
                                                 lambda key: programs[key][1], forget=True)
        except sandbox.SandboxError as exc:
            first.close()
            raise VerifierError(f"Verifier: params.isolation: {exc}") from exc
        self.isolation = first.isolation  # what the sandbox applied: namespaces, namespaces-userns, landlock, basic
        self._life = _Life(self._owner)
        if self.isolation == "basic" and self.config.params.isolation == "auto" and not allow_basic:
            _close_pool(self._pool, self.isolation, self._life)
            raise VerifierError(f"Verifier: isolation: auto found neither namespaces nor Landlock here "
                                f"({first.isolation_reason}); the basic sandbox that is left lets a candidate read "
                                "what this process can read (your files, the datasets' answers), so it runs only "
                                "when asked: isolation=\"basic\" or allow_basic=True")
        LOG.info("Verifier(%r): isolation %s (%s)", self.dataset, self.isolation, first.confinement or "no more")
        if self.isolation == "basic":
            warnings.warn(f"Verifier({self.dataset!r}) runs candidates in the basic sandbox, which can read your "
                          f"files: {first.isolation_reason}; {sandbox.harness.BASIC_ALONE}", RuntimeWarning,
                          stacklevel=2)
        self._finalizer = weakref.finalize(self, _left_open, self._pool, self.isolation, self._life, repr(self))

    # -- the public calls
    def verify(self, samples: Iterable[SampleInput]) -> list[Verdict]:
        """A ``Verdict`` per sample, in the order given. Every sample is checked before any runs (a bad one is a
        ``VerifierError`` naming its index), so a batch is judged whole or not at all."""
        entries = [self._entry(index, sample) for index, sample in enumerate(_samples(samples))]
        return list(self._judge(iter(entries)))

    def stream(self, samples: Iterable[SampleInput]) -> Iterator[Verdict]:
        """Verdicts as the samples are judged, in the order given, reading ``samples`` lazily: memory stays that
        of a few hundred samples in flight, however long the input (a bad sample raises when it is reached)."""
        return self._judge(self._entry(index, sample) for index, sample in enumerate(_samples(samples)))

    async def averify(self, samples: Iterable[SampleInput]) -> list[Verdict]:
        """``verify`` for an event loop: the batch is judged in a thread, and the loop goes on meanwhile."""
        entries = [self._entry(index, sample) for index, sample in enumerate(_samples(samples))]
        stop = threading.Event()
        try:
            return await asyncio.to_thread(lambda: list(self._judge(iter(entries), stop)))
        except BaseException:  # cancelled (Ctrl-C under asyncio.run is a cancellation): the thread stops too, so
            stop.set()         # the loop's shutdown does not wait for the whole batch, and the sandboxes are free
            raise

    async def astream(self, samples: Iterable[SampleInput]) -> AsyncIterator[Verdict]:
        """``stream`` for an event loop."""
        stop = threading.Event()
        verdicts = self._judge((self._entry(index, sample) for index, sample in enumerate(_samples(samples))), stop)
        done = object()
        try:
            while True:
                verdict = await asyncio.to_thread(next, verdicts, done)
                if verdict is done:
                    return
                assert isinstance(verdict, Verdict)
                yield verdict
        finally:
            stop.set()

    def close(self) -> None:
        """Stop the sandboxes (samples in flight are abandoned: their calls get harness_error)."""
        with self._lock:
            self._closed = True
        if self._finalizer.detach() is not None:
            _close_pool(self._pool, self.isolation, self._life)

    def __enter__(self) -> Verifier:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Verifier({self.dataset!r}, isolation={self.isolation!r}, workers={self._pool.active})"

    # -- inside
    def _entry(self, index: int, sample: SampleInput) -> _Entry:
        where = f"sample {index}"
        if isinstance(sample, Mapping):
            task_id = sample.get("task_id")
            row: Mapping[str, Any] = sample
        elif isinstance(sample, Sequence) and not isinstance(sample, (str, bytes)) and len(sample) == 2:
            task_id, row = sample[0], {"completion": sample[1]}
        else:
            raise VerifierError(f"{where}: expected (task_id, completion) or a mapping with task_id and completion "
                                f"or solution, found {type(sample).__name__}")
        if not isinstance(task_id, str):
            raise VerifierError(f"{where}: task_id: expected a string, found {type(task_id).__name__}")
        problem = self.problems.get(task_id)
        if problem is None:
            raise VerifierError(f"{where}: task_id: expected a task of {self.dataset}, found {task_id[:80]!r}")
        try:
            completion, solution, _ = code_of_row(where, row, problem.prompt)
        except DatasetError as exc:
            raise VerifierError(str(exc)) from None
        if completion is None:
            why = f"no code: the sample's {'solution' if 'solution' in row else 'completion'} is None"
            return _Entry(index, task_id, ready=Verdict(index, task_id, Status.NOT_RUN, why, 0.0))
        program = program_for(problem, completion, solution, self._suites, self.config.params.plus)
        return _Entry(index, task_id, program, original=impossible.original_program(problem, program),
                      code=solution if solution is not None else completion, problem=problem)

    def _judge(self, entries: Iterator[_Entry], stop: threading.Event | None = None) -> Iterator[Verdict]:
        if os.getpid() != self._owner:
            raise VerifierError("Verifier: used in a process forked from the one that created it (its sandboxes' "
                                "threads are not there): create the Verifier in the process that calls it")
        if self._closed:
            raise VerifierError("Verifier: closed (its sandboxes are stopped): make a new one")
        call = next(self._calls)
        window = self._pool.reach  # fed ahead of the verdict handed out: the pool may run this far
        dedupe = self.config.params.dedupe
        memo: OrderedDict[sandbox.Program, _Known] = OrderedDict()  # executed: verdict, index, original's
        inflight: dict[sandbox.Program, int] = {}  # fed and not yet handed out: index
        pending: deque[_Entry] = deque()
        try:
            while True:
                for entry in itertools.islice(entries, window - len(pending)):
                    if entry.program is not None and not (dedupe and (entry.program in inflight
                                                                      or entry.program in memo)):
                        self._feed((call, entry.index), entry)
                        if dedupe:
                            inflight[entry.program] = entry.index
                    pending.append(entry)
                if not pending:
                    return
                if stop is not None and stop.is_set():
                    return
                entry = pending.popleft()
                try:
                    verdict = self._verdict(entry, memo, inflight, call, stop)
                except _Cancelled:
                    return
                yield verdict
        finally:  # a stream dropped midway: the samples fed and not handed out are let go, run or not
            dropped = [key for entry in pending if entry.key is not None
                       for key in (entry.key, (entry.key, "original"))]
            self._pool.discard(dropped)
            for key in dropped:
                self._programs.pop(key, None)

    def _feed(self, key: Hashable, entry: _Entry) -> None:
        assert entry.program is not None
        problem = self.problems[entry.task_id]
        cost = expected_cost(problem, self._suites)
        self._programs[key] = (entry.program, cost)
        entry.key = key
        if entry.original is not None:  # an impossible dataset: both tests, side by side in the pool
            self._programs[(key, "original")] = (entry.original, cost)
            self._pool.feed([key, (key, "original")])
        else:
            self._pool.feed([key])

    def _verdict(self, entry: _Entry, memo: OrderedDict[sandbox.Program, _Known],
                 inflight: dict[sandbox.Program, int], call: int, stop: threading.Event | None = None) -> Verdict:
        if entry.ready is not None:
            return entry.ready
        program = entry.program
        assert program is not None
        if entry.key is None:  # a repeat: the first's verdict, when it had one on the candidate
            known = memo.get(program)
            if known is not None:
                memo.move_to_end(program)
                return _verdict_of(entry, known[0], repeat_of=known[1], original=known[2])
            self._feed((call, entry.index, "again"), entry)
        result = self._take(entry.key, stop)
        original = None
        if entry.original is not None:
            ran = self._take((entry.key, "original"), stop)
            original = ran.status if result.status.attempted and ran.status.attempted else None
        if self.config.params.dedupe:
            if inflight.get(program) == entry.index:
                del inflight[program]
            if result.status.attempted:
                memo[program] = (result, entry.index, original)
                if len(memo) > MEMO_MAX:
                    memo.popitem(last=False)
        return _verdict_of(entry, result, original=original)

    def _take(self, key: Hashable, stop: threading.Event | None = None) -> ExecResult:
        try:
            result = self._pool.take(key, stop) if not self._closed else None
        except sandbox.SandboxError as exc:
            result = ExecResult(Status.HARNESS_ERROR, 0.0, str(exc))
        except Exception as exc:  # the harness's own failure on this sample: never a verdict on the candidate
            result = ExecResult(Status.HARNESS_ERROR, 0.0, f"the harness failed on this sample: "
                                                           f"{type(exc).__name__}: {exc}")
        finally:
            self._programs.pop(key, None)
        if result is None and stop is not None and stop.is_set():
            self._pool.discard([(key, "original")])  # its pair, if it has one, is let go with it
            self._programs.pop((key, "original"), None)
            raise _Cancelled
        if result is None:
            result = ExecResult(Status.HARNESS_ERROR, 0.0, "the Verifier was closed before this sample ran")
        return result


def _samples(samples: Iterable[SampleInput]) -> Iterator[SampleInput]:
    if isinstance(samples, (str, bytes, Mapping)) or not hasattr(samples, "__iter__"):
        raise VerifierError(f"Verifier: samples: expected an iterable of samples ((task_id, completion) pairs or "
                            f"mappings), found {type(samples).__name__}")
    return iter(samples)


def _verdict_of(entry: _Entry, result: ExecResult, repeat_of: int | None = None,
                original: Status | None = None) -> Verdict:
    suites = result.suites or {}
    base, extra = suites.get("base"), suites.get("plus")
    detail = sandbox.clean_text(result.detail, DETAIL_MAX, line=True)
    verdict = Verdict(entry.index, entry.task_id, result.status, detail, round(result.duration_ms, 3),
                      Status(base["status"]) if base else None, Status(extra["status"]) if extra else None, repeat_of)
    if entry.original is None:
        return verdict
    found = impossible.evidence(entry.problem, result.status, original, detail) if entry.problem is not None else []
    return dataclasses.replace(verdict, original_status=original,
                               impossible_category=impossible.categorize(result.status, detail, original, entry.code),
                               impossible_evidence=tuple(found))


def _close_pool(pool: VerdictPool, isolation: str, life: _Life) -> None:
    if os.getpid() != life.owner:
        return  # a forked copy: the sandboxes are the parent's, and its threads are not here
    # Under namespaces a killed supervisor takes all its samples' processes with it (its PID namespace).
    pool.close(abandon=isolation.startswith("namespaces"))


def _left_open(pool: VerdictPool, isolation: str, life: _Life, name: str) -> None:
    """A Verifier collected, or left at exit, without ``close``: its sandboxes are closed all the same."""
    if not life.kept and os.getpid() == life.owner:
        warnings.warn(f"unclosed {name}: close it, or use it in a with block (its sandboxes are closed now)",
                      ResourceWarning, stacklevel=2)
    _close_pool(pool, isolation, life)


def _config(data: dict[str, Any]) -> RunConfig:
    where = Path.cwd() / "Verifier"  # relative dataset paths resolve against the current folder
    try:
        return config_from_mapping(data, where)
    except ConfigError as exc:
        raise VerifierError(_named(str(exc), where)) from None


def _named(message: str, where: Path) -> str:
    """A config error as the library's caller reads it: the Verifier's argument, not a file."""
    return message.replace(f"{where}: ", "Verifier: ")
