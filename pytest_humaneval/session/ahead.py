"""xdist's queue, read for the judge's pool on a worker (``Benchmark.running`` starts and stops the pool).

On an xdist worker the controller hands out items a few at a time, so the order is not known ahead: a worker with a
pool (``params.workers`` > 1) tells the judge each item with the ones xdist has already queued for it. Without xdist
the pool is fed the whole session when the run loop starts (``Benchmark.running``); ``params.workers: 1`` (and a
worker without ``params.workers``) keeps no pool: each item's sample runs when its item asks for its verdict.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from ._xdist_internals import worker_queue
from .items import JUDGE_KEY, HumanEvalItem

__all__ = ["XdistQueue"]


class XdistQueue:
    """Registered on an xdist worker whose items execute samples: before each item, the judge is told which come
    next (``Benchmark.running`` starts and stops its pool around the run loop)."""

    def __init__(self) -> None:
        self._xdist_queue: Any = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        judge = item.config.stash.get(JUDGE_KEY, None)
        if judge is None or not judge.pool.window:
            return  # no pool: each sample runs when its item asks
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
