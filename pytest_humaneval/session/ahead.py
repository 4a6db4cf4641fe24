"""The pytest side of the judge's pool (``engine/judge.py``, ``sandbox/pool.py``): when it runs samples ahead, and
which ones it is told come next.

- **Without xdist** the pool starts when the run loop starts, fed the session's items as they will run (after
  ``-k``, ``-m``, ``--lf``, ``--deselect`` and any reordering plugin), and stops when the loop ends for whatever
  reason (the last item, ``-x``/``--maxfail``, Ctrl-C, an internal error): so it never runs a sample after the
  session's last item.
- **On an xdist worker** the controller hands out items a few at a time, so the order is not known ahead: a
  worker with a pool (``params.workers`` > 1) feeds it each item with the ones xdist has already queued for it.
- ``params.workers: 1`` (and a worker without ``params.workers``) keeps no pool: each item's sample runs when its
  item asks for its verdict.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from ..engine import Judge
from ..engine.judge import SandboxError
from ..engine.sandboxes import pool_size
from ._xdist_internals import worker_queue
from .items import JUDGE_KEY, RUN_KEY, HumanEvalItem

__all__ = ["PoolHooks"]


class PoolHooks:
    """Registered by the plugin in every process that executes samples."""

    def __init__(self) -> None:
        self._xdist_queue: Any = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Iterator[None]:
        judge = _judge_of(session)
        started = judge is not None and _run_ahead(session, judge)
        try:
            yield
        finally:
            if started:
                assert judge is not None and judge.sandboxes is not None
                judge.sandboxes.stop_ahead()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        judge = item.config.stash.get(JUDGE_KEY, None)
        if judge is None or not judge.pool.window or not hasattr(item.config, "workerinput"):
            return  # without xdist the pool was fed the whole session when the loop started
        upcoming = [item] if nextitem is None else [item, nextitem]
        upcoming += self._queued(item.session, judge.pool.window)
        judge.feed(i.sample for i in upcoming if isinstance(i, HumanEvalItem))

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


def _judge_of(session: pytest.Session) -> Judge | None:
    """This process's judge when its items execute samples and the run loop runs them."""
    config = session.config
    run = config.stash.get(RUN_KEY, None)
    if run is None or not run.config.executes or config.option.collectonly:
        return None
    if session.testsfailed and not config.option.continue_on_collection_errors:
        return None  # the run loop stops before any item
    return config.stash.get(JUDGE_KEY, None)


def _run_ahead(session: pytest.Session, judge: Judge) -> bool:
    """Start the judge's pool, when this process runs more than one sample at a time; without xdist, feed it the
    session's items. On an xdist worker, first wait here for the sandbox that started while it collected, so its
    start-up (up to ``STARTUP_TIMEOUT_S``, and a fallback's) is never charged to the first item's pytest-timeout: a
    slow start on a busy machine is a slow session, not a harness_error. A sandbox that cannot start is left to the
    items, which each report why."""
    config, sandboxes = session.config, judge.sandboxes
    assert sandboxes is not None
    distributed = hasattr(config, "workerinput")
    if distributed:  # (without xdist the sandbox started, and was waited for, at session start)
        try:
            sandboxes.start()
        except Exception:  # (a SandboxError, or the temporary folder refused): each item reports it, as before
            pass
    size = pool_size(config.stash[RUN_KEY].config.params.workers, distributed)
    if not distributed:
        # An xdist controller runs no item (pytest < 8 does not even give its session an ``items`` list).
        items = [item for item in getattr(session, "items", ())
                 if isinstance(item, HumanEvalItem) and judge.executes(item.sample)]
        size = min(size, len(items))
    if size < 2:
        return False
    try:  # the process's own sandbox, started at session start, and fresh ones beside it
        sandboxes.run_ahead(size)
    except SandboxError:
        return False  # each item reports why, as without a pool
    if not distributed:
        judge.feed(item.sample for item in items)
    return True
