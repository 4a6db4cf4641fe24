"""Verdicts computed ahead: a pool of warm sandboxes runs the session's samples in item order, ahead of the items.

No pytest import. Without xdist, one pytest process does two kinds of work per sample: pytest's own (hooks,
reports, the terminal) and the sample's execution, which happens in the sandbox's processes while the pytest
process only waits. Run one after the other, they add up; here they overlap: while pytest reports item i,
the pool's sandboxes already execute the samples after it. Each sandbox (one supervisor, one sample at a time)
is driven by a thread of its own, which spends its life blocked on the supervisor's pipe.

Rules that keep a session's meaning unchanged:

- samples start in the order they are fed (the session's final item order) and never more than ``window``
  samples ahead of the last item that asked for its verdict, so memory stays flat and a stopped session has
  executed at most ``window`` samples it will not report. One exception: while a sample has been running for
  ``stall_s`` or more (a timeout, a slow HumanEval+ suite), the other sandboxes may run up to ``reach`` samples
  ahead instead of idling behind it, so a long sample costs its own sandbox's time, not the whole pool's;
- a sample expected to be long (``cost``: the canonical solution's time on its suites, HEAVY_S or more; what a
  sample that passes them spends) may start before its turn, longest first, in at most ``lanes`` sandboxes at
  a time and never more than ``reach`` such verdicts held for their items: otherwise a long sample late in the
  order runs alone at the end while the other CPUs have nothing left to do (MBPP+ holds a task whose canonical
  solution takes 30 s). A stopped session may so have executed a few long samples it will not report;
- at most ``active`` sandboxes run samples that have not stalled; the others are spares, each of which may take
  a sample while one of the ``active`` ones is held by a stalled sample, so the CPU that sample leaves idle (it
  sleeps, or waits for input) judges the samples behind it. A sample has stalled once it has run ``stall_s``
  longer than its expected cost (0 s when none is known): a long sample that computes as expected holds its CPU,
  and a spare beside it would only share that CPU;
- each verdict is handed out once, to the item that asks for it (``take``); an item the pool does not hold
  (or asks again) gets None and runs its sample itself, as without a pool. A pool that lives for many runs
  (``forget``: the library's ``Verifier``) forgets a key once its verdict is handed out, so its memory is that of
  the samples in flight, however many went through it; a key fed again after that is another sample;
- ``close`` starts nothing more and closes every sandbox before it returns, so no sample runs after it. The
  samples in flight are abandoned at once when killing a supervisor kills everything its samples started (its
  own PID namespace: ``abandon``); otherwise they finish, and their supervisor kills what they started: within
  one sample's time, after which a sandbox that does not answer is killed all the same.
"""

from __future__ import annotations

import heapq
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from .harness import ExecResult, Limits, Program

__all__ = ["PoolStats", "VerdictPool", "pool_size", "reach_size", "spare_size", "window_size"]

WINDOW_PER_SANDBOX = 4  # how far ahead of the items the pool may run, per sandbox
MIN_WINDOW = 8
# A sample in flight this long (past its expected cost, for a spare) lets the other sandboxes run up to `reach`
# samples ahead, and a spare take one: measured, 0.25 s against the 1 s before made the MBPP+ comparison file
# 73 s instead of 86 and the 1,640 CodeGen HumanEval+ samples 61 s instead of 64 (docs/performance.md).
STALL_S = 0.25
HEAVY_S = 2.0  # a sample expected to run this long or longer may start before its turn
MAX_SPARES = 8  # each is a supervisor, a judge and a fork server: a few tens of MB
REACH_PER_SANDBOX = 64
MIN_REACH = 128
# Past the sample's own limit, how long close() waits for a sample in flight before it kills its sandbox:
# the supervisor's grace for the judge's verdict, the descendants' kill and its own exit.
STOP_GRACE_S = 5.0
STARTING = object()  # _next_key's answer to a spare that must start before it takes a sample
CANCEL_POLL_S = 0.05  # how often a take that may be cancelled looks at its cancel event
# No wait, an item's or a sandbox's, lasts longer than this before it looks at the pool again. Every state change
# notifies; a wake-up that goes missing all the same (a notify_all cut short by pytest-timeout's signal in the
# item's thread, or a path not found yet: a sample once waited 63 s for its verdict, cause unknown) then costs
# a second, not the item's pytest-timeout.
RECHECK_S = 1.0


class Box(Protocol):
    """What the pool needs of a sandbox (``sandbox.Sandbox``)."""

    def run(self, program: Program, limits: Limits) -> ExecResult: ...

    def close(self) -> None: ...

    def kill(self) -> None: ...


def _ready(box: Box) -> None:
    """``box`` started before it takes a sample, in its own thread (a spare when it is first needed): a start-up
    (up to STARTUP_TIMEOUT_S, tried twice when it hangs) is never charged to a sample's time, where
    pytest-timeout's safety net would stop it (a sample once waited 63 s for its verdict). A sandbox that cannot
    start says why to the samples it runs."""
    start = getattr(box, "start", None)
    if start is not None:
        try:
            start()
        except Exception:
            pass


def pool_size(workers: int | None, distributed: bool) -> int:
    """Sandboxes per pytest process: ``params.workers``, else the CPUs this process may use, or one per xdist
    worker (xdist already runs a process per CPU; ``params.workers`` gives each worker a pool, e.g. one worker
    per host with ``--tx``)."""
    if workers is not None:
        return workers
    if distributed:
        return 1
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux: the package needs Linux, but stay importable
        return os.cpu_count() or 1


def spare_size(size: int) -> int:
    """Sandboxes kept beside ``size`` for the samples behind stalled ones (one per stalled sample, at most)."""
    return min(size, MAX_SPARES)


def window_size(size: int) -> int:
    """How many samples the pool may run ahead of the last item that asked for its verdict."""
    return max(MIN_WINDOW, WINDOW_PER_SANDBOX * size)


def reach_size(size: int) -> int:
    """How far ahead the pool may run while one of its samples has been running for STALL_S or more."""
    return max(MIN_REACH, REACH_PER_SANDBOX * size)


@dataclass
class PoolStats:
    """Where a session's time went: how often, and how long in all, items waited for their verdict."""

    executed: int = 0  # samples the pool ran
    taken: int = 0  # verdicts handed to items
    waits: int = 0  # items whose verdict was not ready when they asked
    waited_s: float = 0.0  # the pytest process's time blocked on verdicts


class VerdictPool:
    def __init__(self, boxes: Sequence[Box], limits: Limits, program: Callable[[Hashable], Program],
                 window: int | None = None, stop_grace_s: float = STOP_GRACE_S, stall_s: float = STALL_S,
                 reach: int | None = None, active: int | None = None,
                 cost: Callable[[Hashable], float] | None = None, lanes: int | None = None,
                 forget: bool = False) -> None:
        self._boxes = list(boxes)
        # How many sandboxes may run a sample that has not stalled: the first ``active`` always may; the others
        # (spares) only while a sample has run for stall_s or more, one for each, so the CPUs a stalled sample
        # (a timeout, a slow HumanEval+ suite) leaves idle judge the samples behind it.
        self.active = min(len(self._boxes), active if active is not None else len(self._boxes))
        self._limits = limits
        self._program = program  # a key's sample, built when it is about to run (in the sandbox's thread)
        self.window = window if window is not None else window_size(len(self._boxes))
        self.reach = max(self.window, reach if reach is not None else reach_size(len(self._boxes)))
        self.stall_s = stall_s
        self._stop_grace_s = stop_grace_s
        self._cond = threading.Condition()
        self._schedule: deque[Hashable] = deque()  # the keys from position ``_offset`` on
        self._offset = 0  # the keys before it have started (forgotten: only the next one to start is looked at)
        self._forget = forget
        self._position: dict[Hashable, int] = {}
        self._next = 0  # the position of the next sample to start
        self._cursor = 0  # positions below it were asked for
        self._done: dict[Hashable, tuple[ExecResult | None, BaseException | None]] = {}
        self._taken: set[Hashable] = set()
        self._stopping = False
        self._busy: dict[int, float] = {}  # the sandboxes running a sample now (by index): since when
        self._stall_at: dict[int, float] = {}  # and when their sample will have stalled: stall_s past its cost
        # Long samples started before their turn (see the module docstring): by expected cost.
        self._cost = cost
        self.lanes = max(1, lanes if lanes is not None else self.active // 2)
        self._long: list[tuple[float, int, Hashable]] = []  # heap of (-cost, position, key) not started yet
        self._early: set[Hashable] = set()  # every key started before its turn (or discarded before its start)
        self._cancelled: set[Hashable] = set()  # discarded before they started: never to start
        self._dropped: set[Hashable] = set()  # discarded while running: their verdict is not kept
        self._held_early: set[Hashable] = set()  # those started before their turn and not yet taken
        self._lane: set[int] = set()  # the sandboxes running one of them
        self._threads = [threading.Thread(target=self._serve, args=(i, box), name=f"humaneval-sandbox-{i}",
                                          daemon=True) for i, box in enumerate(self._boxes)]
        self.stats = PoolStats()

    def start(self) -> VerdictPool:
        for thread in self._threads:
            thread.start()
        return self

    def feed(self, keys: Iterable[Hashable]) -> None:
        """Append samples to run, in the order their items will ask; keys already fed are skipped."""
        with self._cond:
            for key in keys:
                if key not in self._position:
                    position = self._offset + len(self._schedule)
                    self._position[key] = position
                    self._schedule.append(key)
                    seconds = self._cost(key) if self._cost is not None else 0.0
                    if seconds >= HEAVY_S:
                        heapq.heappush(self._long, (-seconds, position, key))
            self._cond.notify_all()

    def take(self, key: Hashable, cancel: threading.Event | None = None) -> ExecResult | None:
        """The verdict of ``key``'s sample, waiting for it if needed (and raising what the sandbox raised);
        None when the pool does not hold it: never fed, already taken, or never started before ``close``; or when
        ``cancel`` is set while it waits, and then the sample is let go as ``discard`` lets it go."""
        with self._cond:
            position = self._position.get(key)
            if position is None or key in self._taken:
                return None
            self._taken.add(key)
            held = key in self._held_early
            self._held_early.discard(key)  # (room for another long sample, when the reach held them back)
            if position >= self._cursor or held:
                self._cursor = max(self._cursor, position + 1)
                self._cond.notify_all()
            if key not in self._done:
                self.stats.waits += 1
                started = time.monotonic()
                while key not in self._done:
                    if self._stopping and position >= self._next and key not in self._early:
                        return None  # never started, and never will be
                    if cancel is not None and cancel.is_set():
                        self._taken.discard(key)
                        self._let_go(key)
                        self._cond.notify_all()
                        return None
                    self._cond.wait(CANCEL_POLL_S if cancel is not None else RECHECK_S)
                self.stats.waited_s += time.monotonic() - started
            result, error = self._done.pop(key)
            self.stats.taken += 1
            if self._forget:
                del self._position[key]
                self._taken.discard(key)
                if position < self._next:
                    self._early.discard(key)
        if error is not None:
            raise error
        return result

    def discard(self, keys: Iterable[Hashable]) -> None:
        """Forget samples fed and no longer wanted (a stream its reader dropped): one not started never starts, one
        running is not kept when it ends, one judged already is let go."""
        with self._cond:
            for key in keys:
                if key not in self._taken:  # else asked for already (its taker will have it)
                    self._let_go(key)
            self._cond.notify_all()

    def _let_go(self, key: Hashable) -> None:
        position = self._position.get(key)
        if position is None:
            return
        self._held_early.discard(key)
        if key in self._done:
            del self._done[key]
            del self._position[key]
        elif position < self._next or key in self._early:
            self._dropped.add(key)  # running now
        else:
            self._cancelled.add(key)
            self._early.add(key)  # skipped when its turn comes

    def close(self, abandon: bool = False) -> None:
        """Start nothing more; kill the samples in flight (``abandon``) or wait for them (within one sample's
        time, then kill their sandboxes); every sandbox is closed when this returns, also when a second Ctrl-C
        cuts the wait short."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            busy = [self._boxes[index] for index in sorted(self._busy)] if abandon else []
        for box in busy:
            box.kill()
        deadline = time.monotonic() + self._limits.timeout_s + self._stop_grace_s
        try:
            for thread in self._threads:
                thread.join(max(0.0, deadline - time.monotonic()))
        finally:
            for thread, box in zip(self._threads, self._boxes, strict=False):
                if thread.is_alive():
                    box.kill()
            for thread in self._threads:
                thread.join(self._stop_grace_s)

    def _next_key(self, index: int, started: bool = True) -> Hashable | None:
        """The key sandbox ``index`` runs next (None: the pool closes); STARTING instead of a key when a spare not
        ``started`` yet first has room for one, so that it starts before it takes any (``_serve``)."""
        with self._cond:
            while not self._stopping:
                while self._next < self._end and self._schedule[self._next - self._offset] in self._early:
                    passed = self._schedule[self._next - self._offset]
                    if passed in self._cancelled:
                        self._cancelled.discard(passed)
                        self._position.pop(passed, None)
                        self._early.discard(passed)
                    elif self._forget:  # passed now: nothing asks whether it started early again
                        self._early.discard(passed)
                    self._next += 1  # started before its turn, or discarded
                self._trim()
                room, until_stall = self._room(index)
                if room and not started and (self._long or self._next < self._end):
                    return STARTING
                if room:
                    key = self._long_key()
                    if key is not None:
                        self._lane.add(index)
                        return self._begin(index, key)
                wait = None
                if self._next < self._end:
                    limit = self._cursor + self.window
                    if self._next >= limit and self._busy:
                        running_for = time.monotonic() - min(self._busy.values())
                        if running_for >= self.stall_s:
                            limit = self._cursor + self.reach
                        else:
                            wait = self.stall_s - running_for  # then look again: it may be stalling
                    if self._next < limit:
                        if room:
                            self._next += 1
                            return self._begin(index, self._schedule[self._next - 1 - self._offset])
                        wait = until_stall if wait is None or until_stall is None else min(wait, until_stall)
                elif not room and self._long and until_stall is not None:
                    wait = until_stall
                self._cond.wait(RECHECK_S if wait is None else min(wait, RECHECK_S))
            return None

    @property
    def _end(self) -> int:
        """The position after the last key fed."""
        return self._offset + len(self._schedule)

    def _trim(self) -> None:
        """Drop the keys that have started from the schedule: only ``_schedule[_next]`` is read again."""
        while self._offset < self._next:
            self._schedule.popleft()
            self._offset += 1

    def _begin(self, index: int, key: Hashable) -> Hashable:
        now = time.monotonic()
        self._busy[index] = now
        self._stall_at[index] = now + self.stall_s + (self._cost(key) if self._cost is not None else 0.0)
        self._cond.notify_all()  # a spare that looked while this sandbox was free waits for its stall now
        return key

    def _long_key(self) -> Hashable | None:
        """The longest sample not started yet, when a lane is free and the verdicts held early leave room."""
        if len(self._lane) >= self.lanes or len(self._held_early) >= self.reach:
            return None
        while self._long:
            _, position, key = heapq.heappop(self._long)
            # not started in its turn already, nor asked for already (held_early counts verdicts not yet taken)
            if position >= self._next and key not in self._taken and key not in self._cancelled:
                self._early.add(key)
                self._held_early.add(key)
                return key
        return None

    def _room(self, index: int) -> tuple[bool, float | None]:
        """Whether sandbox ``index`` may start a sample now; if not, in how long a busy one will have stalled
        (None: when a sandbox is free again)."""
        now = time.monotonic()
        running = [at for at in self._stall_at.values() if now < at]
        if len(running) >= self.active:
            return False, min(running) - now
        if index >= self.active and any(i not in self._busy for i in range(self.active)):
            return False, None  # a first sandbox is free: it goes first
        return True, None

    def _serve(self, index: int, box: Box) -> None:
        """One sandbox's thread: the next sample in order, its verdict (or what went wrong) kept for its item."""
        try:
            started = index < self.active  # a spare starts when it first has room for a sample (STARTING)
            if started:
                _ready(box)
            while True:
                key = self._next_key(index, started)
                if key is None:
                    return
                if key is STARTING:
                    _ready(box)
                    started = True
                    continue
                try:
                    outcome: tuple[ExecResult | None, BaseException | None] = \
                        (box.run(self._program(key), self._limits), None)
                except BaseException as exc:  # the item re-raises it, in the pytest process's thread
                    outcome = (None, exc)
                with self._cond:
                    self._busy.pop(index, None)
                    self._stall_at.pop(index, None)
                    self._lane.discard(index)
                    if key in self._dropped:
                        self._dropped.discard(key)
                        self._position.pop(key, None)
                    else:
                        self._done[key] = outcome
                    self.stats.executed += 1
                    self._cond.notify_all()
        finally:
            box.close()  # in this thread: nothing else uses the sandbox, and it ends with the pool
