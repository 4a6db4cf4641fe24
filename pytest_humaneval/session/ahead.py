"""The pytest side of the pool (``pool.py``): which samples it runs ahead, in which order, and when it stops.

- **Without xdist** the pool starts when the run loop starts, with the session's items as they will run
  (after ``-k``, ``-m``, ``--lf``, ``--deselect`` and any reordering plugin), and stops when the loop ends for
  whatever reason (the last item, ``-x``/``--maxfail``, Ctrl-C, an internal error): so it never runs a sample
  after the session's last item.
- **On an xdist worker** the controller hands out items a few at a time, so the order is not known ahead: a
  worker with a pool (``params.workers`` > 1) feeds it each item with the ones xdist has already queued for it.
- ``params.workers: 1`` (and a worker without ``params.workers``) keeps no pool: each item runs its own sample.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterator
from typing import Any, cast

import pytest

from .. import sandbox
from ..engine.programs import expected_cost
from ..engine.sandboxes import start_pool
from ..sandbox.pool import VerdictPool, pool_size
from ._xdist_internals import worker_queue
from .items import POOL_KEY, RUN_KEY, HumanEvalItem, Original, repeats

__all__ = ["PoolHooks"]


class PoolHooks:
    """Registered by the plugin in every process that executes samples."""

    def __init__(self) -> None:
        self._xdist_queue: Any = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Iterator[None]:
        _await_sandbox(session)
        pool = _start_pool(session)
        if pool is not None:
            session.config.stash[POOL_KEY] = pool
        try:
            yield
        finally:
            if pool is not None:
                del session.config.stash[POOL_KEY]
                # Under namespaces a killed supervisor takes all its samples' processes with it (its PID
                # namespace), so samples no item will report are killed at once, not waited for.
                pool.close(abandon=sandbox.shared().isolation.startswith("namespaces"))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        pool = item.config.stash.get(POOL_KEY, None)
        if pool is None or not hasattr(item.config, "workerinput"):
            return  # without xdist the pool was fed the whole session when the loop started
        upcoming = [item] if nextitem is None else [item, nextitem]
        upcoming += self._queued(item.session, pool.window)
        pool.feed(_executed([i for i in upcoming if isinstance(i, HumanEvalItem) and i.program() is not None]))

    def _queued(self, session: pytest.Session, count: int) -> list[pytest.Item]:
        """The first ``count`` items xdist has already sent this worker, in the order it will run them.
        pytest-xdist keeps them in its worker plugin's ``torun`` queue (3.6 and later); where that is not what
        it looks like, the pool sees the next item only."""
        if self._xdist_queue is None:
            self._xdist_queue = worker_queue(session.config) or False
        if self._xdist_queue is False:
            return []
        with self._xdist_queue.lock() as queued:
            indices = [index for index in itertools.islice(queued, count) if isinstance(index, int)]
        return [session.items[index] for index in indices if index < len(session.items)]


def _await_sandbox(session: pytest.Session) -> None:
    """On an xdist worker, wait here for the sandbox that started while it collected, so its start-up (up to
    ``sandbox.STARTUP_TIMEOUT_S``, and a fallback's) is never charged to the first item's pytest-timeout: a
    slow start on a busy machine is a slow session, not a harness_error. A sandbox that cannot start is left
    to the items, which each report why."""
    run = session.config.stash.get(RUN_KEY, None)
    if run is None or not run.config.executes or session.config.option.collectonly \
            or not hasattr(session.config, "workerinput"):
        return  # without xdist the sandbox started (and was waited for) at configure
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        return  # the run loop stops before any item
    try:
        sandbox.shared().start()
    except Exception:  # (a SandboxError, or the temporary folder refused): each item reports it, as before
        pass


def _start_pool(session: pytest.Session) -> VerdictPool | None:
    config = session.config
    run = config.stash.get(RUN_KEY, None)
    if run is None or not run.config.executes or config.option.collectonly:
        return None
    if session.testsfailed and not config.option.continue_on_collection_errors:
        return None  # the run loop stops before any item
    distributed = hasattr(config, "workerinput")
    size = pool_size(run.config.params.workers, distributed)
    if not distributed:
        # An xdist controller runs no item (pytest < 8 does not even give its session an ``items`` list).
        items = [item for item in getattr(session, "items", ())
                 if isinstance(item, HumanEvalItem) and item.program() is not None]
        size = min(size, len(items))
    if size < 2:
        return None
    try:  # the process's own sandbox, started at configure, and fresh ones beside it
        pool = start_pool(sandbox.shared(), size, run.limits, _program, _cost)
    except sandbox.SandboxError:
        return None  # each item reports why, as without a pool
    if not distributed:
        pool.feed(_executed(items))
    return pool


def _executed(items: list[HumanEvalItem]) -> list[HumanEvalItem | Original]:
    """The samples the pool runs: with ``params.dedupe``, the first item of each identical program (its repeats
    take that verdict in their own setup, ``items.Repeats``); on an impossible dataset each item's ``Original``
    (its sample judged by ``original_test``) right after it."""
    memo = repeats(items[0].config) if items else None
    chosen = items if memo is None else memo.first_of(items)
    return [key for item in chosen
            for key in ((item, Original(item)) if item.original_program() is not None else (item,))]


def _cost(key: Hashable) -> float:
    item = key.item if isinstance(key, Original) else cast(HumanEvalItem, key)
    return expected_cost(item.config.stash[RUN_KEY].plan.problems[item.sample.task_id],
                         item.config.stash[RUN_KEY].plan.suites)


def _program(key: Hashable) -> sandbox.Program:
    program = cast("HumanEvalItem | Original", key).program()
    assert program is not None, "only items that execute are fed to the pool"
    return program
