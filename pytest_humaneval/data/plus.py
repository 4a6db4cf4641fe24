"""EvalPlus suites (HumanEval+, MBPP+): each task's inputs with the canonical solution's outputs and times, limits.

The expected outputs come from running the dataset's ``prompt + canonical_solution`` (without its contract) on
every base and plus input, as EvalPlus does (``_expected.py``, in subprocesses of this interpreter, never in the
pytest process). They are computed once per dataset content, Python version and machine, and kept in the user
cache (one file per task, written to a temporary name and renamed into place, with its length and sha256 in a
header, so a torn or corrupt file is computed again rather than believed).

The interface the judge uses:

- a task's *suites blob*: one ``_wire.encode`` of ``(base_inputs, base_expected, base_seconds, plus_inputs,
  plus_expected, plus_seconds, atol)``: inputs are tuples of argument tuples, expected outputs are Python objects
  as the canonical solution returned them (tuples stay tuples), seconds are floats;
- :class:`Suites` (``Plan.suites``): task_id -> blob, read from this machine's cache when asked (the full
  HumanEval+ table is 271 MB, two tasks over 64 MiB, so it is referred to, not copied into the plan: a process on
  another machine computes its own, with that machine's timings, as EvalPlus does); ``Suites.path`` is the
  cached file itself (the blob starts at ``BLOB_OFFSET``) for a trusted reader on this machine;
- :func:`suite_blobs`: the blobs of some problems at once;
- :func:`suite_limits`: EvalPlus's per-input limits and the cap on one suite's whole run.

No pytest import.
"""

from __future__ import annotations

import hashlib
import math
import os
import platform
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from ..sandbox import _expected, _wire
from . import mbpp
from .dataset import DatasetError, Problem
from .releases import cache_dir

__all__ = ["BLOB_OFFSET", "CALL_LIMIT_S", "SUITE_CAP_S", "SUITE_GRACE_S", "Suites", "oracle", "suite_blobs",
           "suite_limits", "table_folder"]

CHILD = Path(_expected.__file__)
FORMAT = "v2"  # of the cached files; a change of how they are made gets a new folder
CALL_LIMIT_S = 60.0  # a canonical solution slower than this on one input is a broken dataset, not a slow one
SUITE_CAP_S = 60.0  # EvalPlus: a suite's run is capped at min(60 s, sum of the per-input limits) + 1 s
SUITE_GRACE_S = 1.0
Progress = Callable[..., None]  # progress(text, final=False)
BLOB_OFFSET = len(_expected.MAGIC) + _expected.HEADER.size  # where the blob starts in a cached file
MEMO = 2  # blobs kept in memory by a Suites: the samples of one task run one after another


def suite_limits(seconds: Sequence[float], min_time_limit_s: float,
                 time_limit_factor: float) -> tuple[tuple[float, ...], float]:
    """(per-input limits, the suite's cap): L_i = max(T_min, k x t_i), cap = min(60 s, sum of L_i) + 1 s."""
    limits = tuple(max(min_time_limit_s, time_limit_factor * t) for t in seconds)
    return limits, min(SUITE_CAP_S, sum(limits)) + SUITE_GRACE_S


def table_folder(dataset_sha256: str, root: Path | None = None) -> Path:
    """Where the expected outputs of a dataset are cached on this machine and this Python."""
    node = hashlib.sha256(platform.node().encode("utf-8", "surrogatepass")).hexdigest()[:12]
    key = (f"{FORMAT}-{dataset_sha256[:32]}-{sys.implementation.name}{platform.python_version()}"
           f"-{platform.machine() or 'unknown'}-{node}")
    return (root or cache_dir()) / "expected" / key


class Suites(Mapping[str, bytes]):
    """task_id -> suites blob of a dataset's EvalPlus problems, backed by this machine's cache.

    :meth:`ensure` computes what the cache lacks (in parallel); a blob asked for is read and verified then, and
    the last few are kept. A file found torn or corrupt is computed again. Equal when they describe the same
    dataset and tasks; :meth:`to_json` is that description, which is all a plan carries."""

    def __init__(self, dataset_sha256: str, problems: Iterable[Problem], root: Path | None = None) -> None:
        self.dataset_sha256 = dataset_sha256
        self.problems = {problem.task_id: problem for problem in problems if problem.evalplus}
        self.root = root
        self._memo: OrderedDict[str, bytes] = OrderedDict()
        self._checked: set[str] = set()  # tasks whose cached file this process has verified whole
        self._costs: dict[str, float] = {}  # the canonical calls' seconds, from the headers ensure() read
        self._lock = threading.Lock()

    @property
    def folder(self) -> Path:
        return table_folder(self.dataset_sha256, self.root)  # the cache root is read when used, not at creation

    def ensure(self, progress: Progress | None = None, workers: int | None = None) -> None:
        """Compute every task whose cached file is absent or unreadable."""
        folder = self.folder
        missing = []
        for task, problem in self.problems.items():
            seconds = _present(folder / _file_name(task))
            if seconds is None:
                missing.append(problem)
            else:
                self._costs[task] = seconds
        if missing:
            _compute(missing, folder, workers or _cpus(), progress or _silent)
            for problem in missing:
                self._costs[problem.task_id] = _present(folder / _file_name(problem.task_id)) or 0.0

    def cost(self, task_id: str) -> float:
        """The seconds the canonical solution's timed calls took here, base and plus suites (its cached file's
        header): about what a sample that passes both costs. 0.0 for a task :meth:`ensure` did not see."""
        return self._costs.get(task_id, 0.0)

    def path(self, task_id: str) -> Path:
        """The cached file of ``task_id`` (header, then the blob at BLOB_OFFSET), present and verified whole (length
        and sha256, streamed: the blob is not kept) the first time this process asks; computed again if not."""
        problem = self.problems[task_id]
        target = self.folder / _file_name(task_id)
        with self._lock:
            if task_id not in self._checked:
                if not _whole(target):
                    _compute([problem], self.folder, 1, _silent)
                    if not _whole(target):
                        raise DatasetError(f"{task_id}: the expected outputs just computed in {self.folder} "
                                           "cannot be read back (is another process clearing the cache?)")
                self._checked.add(task_id)
        return target

    def __getitem__(self, task_id: str) -> bytes:
        problem = self.problems[task_id]
        with self._lock:
            if task_id in self._memo:
                self._memo.move_to_end(task_id)
                return self._memo[task_id]
            target = self.folder / _file_name(task_id)
            blob = _load(target)
            if blob is None:
                _compute([problem], self.folder, 1, _silent)
                blob = _load(target)
            if blob is None:
                raise DatasetError(f"{task_id}: the expected outputs just computed in {self.folder} cannot be "
                                   "read back (is another process clearing the cache?)")
            self._memo[task_id] = blob
            while len(self._memo) > MEMO:
                self._memo.popitem(last=False)
            return blob

    def __iter__(self) -> Iterator[str]:
        return iter(self.problems)

    def __len__(self) -> int:
        return len(self.problems)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Suites):
            return NotImplemented
        return self.dataset_sha256 == other.dataset_sha256 and list(self.problems) == list(other.problems)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Suites({self.dataset_sha256[:12]}..., {len(self)} tasks)"

    def to_json(self) -> dict[str, str]:
        return {"dataset_sha256": self.dataset_sha256}


def suite_blobs(problems: Iterable[Problem], dataset_sha256: str, *, root: Path | None = None,
                workers: int | None = None, progress: Progress | None = None) -> dict[str, bytes]:
    """task_id -> the suites blob of each EvalPlus problem, computing (in parallel) what is not cached."""
    suites = Suites(dataset_sha256, problems, root)
    suites.ensure(progress, workers)
    return {task: suites[task] for task in suites}


def _silent(*args: Any, **kwargs: Any) -> None:
    pass


def _present(path: Path) -> float | None:
    """The canonical calls' seconds its header records, when a cached file looks whole (header and size, without
    reading it all: a full check happens on use); None when it does not."""
    try:
        with path.open("rb") as handle:
            head = handle.read(BLOB_OFFSET)
            size = os.fstat(handle.fileno()).st_size
    except OSError:
        return None
    if len(head) != BLOB_OFFSET or not head.startswith(_expected.MAGIC):
        return None
    length, _, seconds = _expected.HEADER.unpack_from(head, len(_expected.MAGIC))
    if length != size - BLOB_OFFSET or not math.isfinite(seconds) or seconds < 0:
        return None
    return float(seconds)


def _whole(path: Path) -> bool:
    """The cached file is present and its blob matches the header's length and sha256 (read in chunks)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(BLOB_OFFSET)
            if len(head) != BLOB_OFFSET or not head.startswith(_expected.MAGIC):
                return False
            size, digest, _ = _expected.HEADER.unpack_from(head, len(_expected.MAGIC))
            hasher, seen, first = hashlib.sha256(), 0, b""
            while chunk := handle.read(1 << 20):
                if not first:
                    first = chunk[:5]
                hasher.update(chunk)
                seen += len(chunk)
    except OSError:
        return False
    return seen == size and hasher.digest() == digest and first == b"t\x00\x00\x00\x07"


def oracle(problem: Problem) -> str | None:
    """EvalPlus's special oracle for a problem, by its rule, or None: compare with the expected outputs. On
    HumanEval+, the ``find_zero`` entry point is judged by |poly(xs, x)| <= atol, not by the expected root; on
    MBPP+ (task ids ``Mbpp/<n>``), a few entry points by rules of their own (``mbpp.oracle``)."""
    if mbpp.TASK_ID.match(problem.task_id):
        return mbpp.oracle(problem.entry_point)
    return "polynomial_root" if problem.entry_point == "find_zero" else None


def _file_name(task_id: str) -> str:
    return quote(task_id, safe="") + ".wire"


def _cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _load(path: Path) -> bytes | None:
    """The blob in a cached file, or None when it is absent, torn or corrupt (then it is computed again)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(BLOB_OFFSET)
            blob = handle.read()
    except OSError:
        return None
    if len(head) != BLOB_OFFSET or not head.startswith(_expected.MAGIC):
        return None
    size, digest, _ = _expected.HEADER.unpack_from(head, len(_expected.MAGIC))
    if size != len(blob) or hashlib.sha256(blob).digest() != digest or blob[:5] != b"t\x00\x00\x00\x07":
        return None
    return blob


def _compute(problems: list[Problem], folder: Path, workers: int, progress: Progress) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetError(f"cannot write the expected outputs to the user cache {folder}: "
                           f"{exc.strerror or exc}") from exc
    todo: queue.Queue[Problem] = queue.Queue()
    for problem in problems:
        todo.put(problem)
    state = _State(len(problems), progress)
    threads = [threading.Thread(target=_worker, args=(todo, folder, state), daemon=True)
               for _ in range(min(workers, len(problems)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if state.error is not None:
        raise state.error
    progress(f"humaneval: expected outputs of {len(problems)} task(s) computed in "
             f"{time.perf_counter() - state.started:.1f} s, cached in {folder}", final=True)


class _State:
    """What the worker threads share: progress, and the first error (which stops them all)."""

    def __init__(self, total: int, progress: Progress) -> None:
        self.total, self.done, self.progress = total, 0, progress
        self.error: DatasetError | None = None
        self.started = time.perf_counter()
        self.lock = threading.Lock()

    def finished(self) -> None:
        with self.lock:
            self.done += 1
            self.progress(f"humaneval: computing expected outputs (canonical solutions): {self.done}/{self.total} "
                          f"tasks, {time.perf_counter() - self.started:.1f} s")

    def fail(self, error: DatasetError) -> None:
        with self.lock:
            self.error = self.error or error


def _worker(todo: queue.Queue[Any], folder: Path, state: _State) -> None:
    """One child process; takes tasks until none is left or one has failed."""
    from ..sandbox import sandbox_env  # the environment every process the harness starts gets

    with tempfile.TemporaryDirectory(prefix="humaneval-expected-") as home, \
            tempfile.TemporaryFile() as errors:
        child = subprocess.Popen([sys.executable, "-I", str(CHILD)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=errors, cwd=home, env=sandbox_env())
        try:
            while state.error is None:
                try:
                    problem = todo.get_nowait()
                except queue.Empty:
                    return
                error = _one(child, problem, folder, errors)
                if error is not None:
                    state.fail(error)
                    return
                state.finished()
        finally:
            assert child.stdin is not None and child.stdout is not None  # started with both as pipes
            child.stdin.close()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            child.stdout.close()


def _one(child: subprocess.Popen[bytes], problem: Problem, folder: Path, errors: IO[bytes]) -> DatasetError | None:
    """Compute one task into its cache file; the error that names the task and input, or None."""
    target = folder / _file_name(problem.task_id)
    fd, part = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=folder)
    os.close(fd)
    try:
        request = (problem.prompt + (problem.canonical_solution or ""), problem.entry_point,
                   problem.base_input, problem.plus_input, problem.atol, CALL_LIMIT_S, part,
                   oracle(problem) == "not_none")
        assert child.stdin is not None and child.stdout is not None  # started with both as pipes
        try:
            _wire.write_frame(child.stdin.fileno(), b"Q", _wire.encode(request))
            reply = _wire.read_frame(child.stdout.fileno())
        except (OSError, _wire.WireError):
            reply = None
        if reply is None:
            child.kill()
            code = child.wait()
            errors.seek(0)
            tail = errors.read()[-600:].decode("utf-8", "replace").strip()
            return DatasetError(f"{problem.task_id}: the process computing its expected outputs died (exit "
                                f"{code}){': ' + tail if tail else ''}")
        kind, body = reply
        if kind == b"E":
            suite, index, message = _wire.decode(body)
            where = "when loading" if suite == "load" else f"on {suite} input {index}"
            return DatasetError(f"{problem.task_id}: canonical_solution: expected it to give an output for every "
                                f"input, found it failing {where}: {message}")
        os.replace(part, target)
        return None
    finally:
        if os.path.exists(part):
            os.unlink(part)
