"""``Verifier``: the harness's judge as a library, for scripts, RL trainers' reward functions and runs of millions of
samples. No pytest import.

    from pytest_humaneval import Verifier
    with Verifier("humanevalplus") as verifier:
        verdicts = verifier.verify([(task_id, code), ...])   # a Verdict per sample, in the order given

The same samples, the same verdicts as a pytest run: the Verifier is the ``Judge`` (judge.py) over ``(task_id,
code)`` input, in sandboxes of its own (a pool of warm ones, one per usable CPU), under the same limits and isolation;
identical samples in one call are executed once (``dedupe``).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import threading
import warnings
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from .. import sandbox
from ..config import ConfigError, RunConfig, config_from_mapping
from ..data import plus as evalplus
from ..data.dataset import DatasetError, LoadedDataset, Problem
from ..data.io_problems import with_rule
from ..plan import Sample
from ..sandbox.pool import VerdictPool, pool_size
from .judge import Cancelled, Judge
from .planning import open_dataset
from .programs import code_of_row
from .verdict import Verdict

__all__ = ["GROUND_TRUTH", "SampleInput", "Verdict", "Verifier", "VerifierError"]

# A sample as ``verify`` takes it: ``(task_id, completion)``, or a mapping with ``task_id`` and ``completion`` (the
# code appended to the prompt) or ``solution`` (the whole program).
SampleInput: TypeAlias = "Sequence[Any] | Mapping[str, Any]"
LOG = logging.getLogger("pytest_humaneval")
MEMO_MAX = 4096  # identical samples remembered per call: a stream's memory stays flat
CLOSED = "the Verifier was closed before this sample ran"
# The dataset of a Verifier that starts with no problem: its problems come with the calls (``add_problems``; the
# reward functions' ground truth that holds tests, data/ground_truth.py).
GROUND_TRUTH = "ground-truth"


class VerifierError(ValueError):
    """A bad argument or sample: one line naming it, what was expected and what was found."""


@dataclass
class _Life:
    """What the Verifier's finalizer needs to know (it may not hold the Verifier itself)."""

    owner: int  # the process that made it: only there are its sandboxes its own
    kept: bool = False  # kept for the process's life on purpose (rewards.verifier_for): closed at exit, quietly


class Front:
    """The calls every front over the judge gives (the Verifier, the RayVerifier), over two of its own: ``_entry``
    (a caller's sample checked, or a ``VerifierError`` naming its index) and ``_judge_all`` (the verdicts of the
    entries, in order; it stops early when ``stop`` is set)."""

    def _entry(self, index: int, sample: SampleInput) -> Any:
        raise NotImplementedError

    def _judge_all(self, entries: Iterator[Any], stop: threading.Event | None = None) -> Iterator[Verdict]:
        raise NotImplementedError

    def verify(self, samples: Iterable[SampleInput]) -> list[Verdict]:
        """A ``Verdict`` per sample, in the order given. Every sample is checked before any runs (a bad one is a
        ``VerifierError`` naming its index), so a batch is judged whole or not at all."""
        entries = [self._entry(index, sample) for index, sample in enumerate(_samples(samples))]
        return list(self._judge_all(iter(entries)))

    def stream(self, samples: Iterable[SampleInput]) -> Iterator[Verdict]:
        """Verdicts as the samples are judged, in the order given, reading ``samples`` lazily: memory stays that
        of a few hundred samples in flight, however long the input (a bad sample raises when it is reached)."""
        return self._judge_all(self._entry(index, sample) for index, sample in enumerate(_samples(samples)))

    async def averify(self, samples: Iterable[SampleInput]) -> list[Verdict]:
        """``verify`` for an event loop: the batch is judged in a thread, and the loop goes on meanwhile."""
        entries = [self._entry(index, sample) for index, sample in enumerate(_samples(samples))]
        stop = threading.Event()
        try:
            return await asyncio.to_thread(lambda: list(self._judge_all(iter(entries), stop)))
        except BaseException:  # cancelled (Ctrl-C under asyncio.run is a cancellation): the thread stops too, so
            stop.set()         # the loop's shutdown does not wait for the whole batch, and the sandboxes are free
            raise

    async def astream(self, samples: Iterable[SampleInput]) -> AsyncIterator[Verdict]:
        """``stream`` for an event loop."""
        stop = threading.Event()
        verdicts = self._judge_all((self._entry(index, sample) for index, sample in enumerate(_samples(samples))), stop)
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


class Verifier(Front):
    """A dataset's judge, with its pool of sandboxes started once and kept until ``close`` (or the ``with``
    block's end): create one per process and call it for every batch. Thread-safe; ``verify``, ``stream``,
    ``averify`` and ``astream`` may be called from several threads at once (they share the pool).

    ``dataset``: any name or file a config's ``dataset:`` takes (``humaneval``, ``humanevalplus``,
    ``humanevalplus-mini``, ``mbppplus``, ``humaneval-impossible-oneoff``... or a JSONL(.gz) path), or
    ``"ground-truth"``: no problem at first, each added by ``add_problems`` (an RL set's tests, carried in its rows).
    ``isolation``, ``timeout_s``, ``memory_mb``, ``workers`` (sandboxes; default: the usable CPUs; one in the basic
    sandbox, ``sandbox.harness.BASIC_ALONE``), ``dedupe``,
    ``plus`` (EvalPlus's time limits: ``{"min_time_limit_s": 4.0, "time_limit_factor": 4.0}``) and
    ``impossible_instruction`` (an impossible dataset's instruction) and ``compare`` (standard-input problems'
    comparison rule) are the config keys of the same names under
    ``params:`` (docs/configuration.md), with the same defaults and checks. ``auto`` never ends in the basic
    sandbox (where a candidate reads what the caller can read) unless ``allow_basic``: it raises instead; the
    isolation applied is ``isolation``, logged, and warned about when it is basic. ``progress(text, final=False)`` hears
    about a first use of an EvalPlus dataset (its expected outputs computed once into the user cache)."""

    def __init__(self, dataset: str | os.PathLike[str] = "humaneval", *, isolation: str = "auto",
                 timeout_s: float = 3.0, memory_mb: int = 2048, workers: int | None = None, dedupe: bool = True,
                 plus: Mapping[str, float] | None = None, impossible_instruction: str | None = None,
                 progress: Callable[..., None] | None = None, allow_basic: bool = False,
                 compare: str | None = None) -> None:
        self.config, loaded = opened("Verifier", dataset, progress, isolation=isolation, timeout_s=timeout_s,
                                     memory_mb=memory_mb, workers=workers, dedupe=dedupe, plus=plus,
                                     impossible_instruction=impossible_instruction, compare=compare)
        self.dataset = loaded.name
        self.problems: dict[str, Problem] = {problem.task_id: problem for problem in loaded.problems}
        self._suites: Mapping[str, bytes] = {}
        if loaded.evalplus:
            suites = evalplus.Suites(loaded.sha256, loaded.problems)
            suites.ensure(progress)  # once per dataset, Python and machine; then read from the user cache
            self._suites = suites
        self.limits = sandbox.Limits(timeout_s=self.config.params.timeout_s, memory_mb=self.config.params.memory_mb)
        run = self.config.params
        self._judge = Judge(self.problems, self._suites, self.limits, plus=run.plus, dedupe=run.dedupe,
                            memo_max=MEMO_MAX, outputs=False, isolation=run.isolation, closed_detail=CLOSED)
        sandboxes = self._judge.sandboxes
        assert sandboxes is not None
        self._owner = os.getpid()
        self._lock = threading.Lock()
        self._closed = False
        first = sandboxes.first
        try:
            self._pool: VerdictPool = sandboxes.run_ahead(max(1, pool_size(run.workers, False)), forget=True)
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

    def add_problems(self, problems: Iterable[Problem]) -> None:
        """Make ``problems`` judgeable by their task ids from now on (a problem already known is kept as it is);
        a task id the Verifier knows as another problem is a ``VerifierError`` naming it. Thread-safe."""
        with self._lock:
            add_problems(self.problems, problems, self.dataset, self.config.params.compare)

    def close(self) -> None:
        """Stop the sandboxes (samples in flight are abandoned: their calls get harness_error)."""
        with self._lock:
            self._closed = self._judge.closed = True
        if self._finalizer.detach() is not None:
            _close_pool(self._pool, self.isolation, self._life)

    def __enter__(self) -> Verifier:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Verifier({self.dataset!r}, isolation={self.isolation!r}, workers={self._pool.active})"

    # -- inside
    def _entry(self, index: int, sample: SampleInput) -> Sample:
        """``sample`` as the judge takes it, checked: a bad one is a ``VerifierError`` naming its index."""
        task_id, row, completion, solution = checked_sample(self.problems, self.dataset, index, sample)
        if completion is None:
            why = f"no code: the sample's {'solution' if 'solution' in row else 'completion'} is None"
            return Sample(task_id, index, None, why)
        return Sample(task_id, index, completion, solution=solution)

    def _judge_all(self, samples: Iterator[Sample], stop: threading.Event | None = None) -> Iterator[Verdict]:
        """The verdicts of ``samples``, in order, feeding the judge as far ahead as the pool may run."""
        if os.getpid() != self._owner:
            raise VerifierError("Verifier: used in a process forked from the one that created it (its sandboxes' "
                                "threads are not there): create the Verifier in the process that calls it")
        if self._closed:
            raise VerifierError("Verifier: closed (its sandboxes are stopped): make a new one")
        judge = self._judge.scoped()  # this call's memo of identical samples, over the Verifier's sandboxes
        window = judge.pool.reach  # fed ahead of the verdict handed out: the pool may run this far
        pending: deque[Sample] = deque()
        try:
            while True:
                fresh = list(itertools.islice(samples, window - len(pending)))
                judge.feed(fresh)
                pending.extend(fresh)
                if not pending:
                    return
                if stop is not None and stop.is_set():
                    return
                sample = pending.popleft()
                try:
                    verdict = judge.verdict(sample, stop)
                except Cancelled:
                    return
                yield verdict
        finally:  # a stream dropped midway: the samples fed and not handed out are let go, run or not
            judge.discard(pending)


def add_problems(known: dict[str, Problem], problems: Iterable[Problem], dataset: str,
                 compare: str | None = None) -> None:
    """``problems`` into ``known`` by task id (one already there kept as it is), compared by ``compare`` (a run's
    rule: ``params.compare``) when it is set; another problem under a task id ``known`` has is a ``VerifierError``
    naming it. The caller holds its lock."""
    if compare is not None:
        problems = with_rule(problems, compare, "compare")
    for problem in problems:
        found = known.get(problem.task_id)
        if found is None:
            known[problem.task_id] = problem
        elif found != problem:
            raise VerifierError(f"add_problems: {problem.task_id}: expected a new task id or the same problem, found "
                                f"another problem under a task id of {dataset}")


def checked_sample(problems: Mapping[str, Problem], dataset: str, index: int,
                   sample: SampleInput) -> tuple[str, Mapping[str, Any], str | None, str | None]:
    """A caller's sample checked as every front over the judge checks it (the Verifier, the RayVerifier): its task,
    its row, and its code (completion, solution; None: no code); a bad one is a ``VerifierError`` naming its index."""
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
    problem = problems.get(task_id)
    if problem is None:
        raise VerifierError(f"{where}: task_id: expected a task of {dataset}, found {task_id[:80]!r}")
    try:
        completion, solution, _ = code_of_row(where, row, problem.prompt)
    except DatasetError as exc:
        raise VerifierError(str(exc)) from None
    return task_id, row, completion, solution


def _samples(samples: Iterable[SampleInput]) -> Iterator[SampleInput]:
    if isinstance(samples, (str, bytes, Mapping)) or not hasattr(samples, "__iter__"):
        raise VerifierError(f"Verifier: samples: expected an iterable of samples ((task_id, completion) pairs or "
                            f"mappings), found {type(samples).__name__}")
    return iter(samples)


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


def opened(front: str, dataset: object, progress: Callable[..., None] | None, *, isolation: object,
           timeout_s: object, memory_mb: object, workers: object, dedupe: object, plus: object,
           impossible_instruction: object, compare: object = None) -> tuple[RunConfig, LoadedDataset]:
    """A front's keywords checked as the config's keys of the same names under ``params:`` are, and its dataset
    opened: a bad one is a ``VerifierError`` naming the keyword (``front``: the class the caller made)."""
    if not isinstance(dataset, (str, os.PathLike)):
        raise VerifierError(f"{front}: dataset: expected a dataset's name or a file's path, found "
                            f"{type(dataset).__name__}")
    if plus is not None and not isinstance(plus, Mapping):
        raise VerifierError(f"{front}: plus: expected a mapping of EvalPlus's time limits, found "
                            f"{type(plus).__name__}")
    params: dict[str, object] = {"execute": True, "isolation": isolation, "timeout_s": timeout_s,
                                 "memory_mb": memory_mb, "workers": workers, "dedupe": dedupe,
                                 "impossible_instruction": impossible_instruction, "compare": compare}
    if plus is not None:
        params["plus"] = dict(plus)
    where = Path.cwd() / front  # relative dataset paths resolve against the current folder
    inline = dataset == GROUND_TRUTH
    try:
        config = config_from_mapping({"target": {"mode": "mock"}, "params": params,
                                      **({} if inline else {"dataset": os.fspath(dataset)})}, where)
        loaded = LoadedDataset(GROUND_TRUTH, [], "", "", False) if inline else open_dataset(config, progress)[0]
    except (ConfigError, DatasetError) as exc:
        raise VerifierError(str(exc).replace(f"{where}: ", f"{front}: ")) from None
    return config, loaded
