"""A pytest plugin for the benchmarks: where a session without xdist spends its time per item.

    python -m pytest -p bench.pool_profile -p no:xdist --humaneval-config CFG -q   (from the repository root)

At the end it prints, for the run loop (every item's setup, call, teardown and reports):

- wall time per item;
- the pytest process's main thread CPU per item: pytest's own per-item work (hooks, reports, terminal,
  results file) plus handing the sample to the sandbox or taking its verdict from the pool;
- the time items waited for their verdict: with the pool, how long ``take`` blocked (and how many items had
  to wait at all); without it (``params.workers: 1``), each item's whole sample, measured around setup;
- the sandboxes' CPU (supervisors, judges and candidates), once they are reaped: the pool's at the loop's end.
"""

from __future__ import annotations

import os
import time

import pytest

from pytest_humaneval.session.items import JUDGE_KEY, HumanEvalItem


class _Profile:
    def __init__(self) -> None:
        self.items = 0
        self.loop_s = self.main_cpu_s = self.setup_s = 0.0
        self.children_cpu_s = 0.0
        self.pool = None


_profile = _Profile()


def _children_cpu() -> float:
    times = os.times()
    return times.children_user + times.children_system


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtestloop(session: pytest.Session):
    wall, cpu, children = time.perf_counter(), time.thread_time(), _children_cpu()
    yield
    _profile.loop_s = time.perf_counter() - wall
    _profile.main_cpu_s = time.thread_time() - cpu
    _profile.children_cpu_s = _children_cpu() - children


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    started = time.perf_counter()
    yield
    if isinstance(item, HumanEvalItem):
        _profile.items += 1
        _profile.setup_s += time.perf_counter() - started
        judge = item.config.stash.get(JUDGE_KEY, None)
        if _profile.pool is None and judge is not None and judge.sandboxes is not None:
            _profile.pool = judge.sandboxes.ahead  # (the judge's pool of sandboxes, while the run loop runs)


def pytest_terminal_summary(terminalreporter, config) -> None:
    if hasattr(config, "workerinput") or not _profile.items:
        return
    n, per = _profile.items, lambda seconds: f"{seconds / _profile.items * 1000:.2f} ms"
    write = terminalreporter.write_line
    pool = _profile.pool
    write(f"bench: {n} items, run loop {_profile.loop_s:.2f} s ({per(_profile.loop_s)} per item, "
          f"{n / _profile.loop_s:.0f} items/s)")
    write(f"bench: pytest process main thread CPU {_profile.main_cpu_s:.2f} s ({per(_profile.main_cpu_s)} per "
          "item: pytest's own work and the hand-off)")
    if pool is not None:
        stats = pool.stats
        write(f"bench: pool of {len(pool._boxes)} sandboxes, window {pool.window}: items waited for their "
              f"verdict {stats.waited_s:.2f} s in all ({per(stats.waited_s)} per item; {stats.waits} of "
              f"{stats.taken} items waited at all); {stats.executed} samples executed")
    else:
        write(f"bench: no pool: item setup (the sample, executed in it) {_profile.setup_s:.2f} s "
              f"({per(_profile.setup_s)} per item)")
    if _profile.children_cpu_s:
        write(f"bench: sandboxes' CPU reaped during the loop {_profile.children_cpu_s:.2f} s "
              f"({per(_profile.children_cpu_s)} per item)")
