"""What ``_xdist_internals`` expects of pytest-xdist's private parts, checked against the installed xdist: a new
xdist that changes one fails here, by name, instead of somewhere in a distributed run."""

from __future__ import annotations

import inspect
from importlib.metadata import version

import xdist.dsession
import xdist.remote
import xdist.scheduler
import xdist.workermanage

from pytest_humaneval.session import _xdist_internals


def test_the_installed_xdist_is_a_known_version():
    installed = ".".join(version("pytest-xdist").split(".")[:2])
    assert installed in _xdist_internals.KNOWN_VERSIONS, (
        f"pytest-xdist {installed}: check _xdist_internals' expectations against it, then add it to KNOWN_VERSIONS")


def test_dsession_holds_what_the_hosts_use():
    init = inspect.getsource(xdist.dsession.DSession.__init__)
    for attribute in ("self.nodemanager", "self._session", "self._active_nodes", "self.sched"):
        assert attribute in init, attribute
    assert '"worker_" + ' in inspect.getsource(xdist.dsession.DSession.loop_once)  # events become method calls
    assert "putevent" in inspect.signature(xdist.workermanage.NodeManager.setup_node).parameters
    assert isinstance(inspect.getattr_static(xdist.workermanage.WorkerController, "shutting_down"), property)


def test_schedulers_wait_for_numnodes_collections():
    for scheduler in (xdist.scheduler.LoadScheduling, xdist.scheduler.LoadScopeScheduling,
                      xdist.scheduler.LoadFileScheduling):
        assert any("self.numnodes = " in inspect.getsource(cls) for cls in scheduler.__mro__[:-1]), scheduler
        assert isinstance(inspect.getattr_static(scheduler, "collection_is_completed"), property)
        assert callable(scheduler.schedule)


def test_workers_queue_what_they_will_run():
    """From 3.7 a worker's queue can be read under its lock; 3.6's cannot, and a pool on a 3.6 worker sees the next
    item only (worker_queue is None there)."""
    source = inspect.getsource(xdist.remote.WorkerInteractor)
    if version("pytest-xdist").startswith("3.6."):
        assert "self.torun = self._make_queue()" in source and not hasattr(xdist.remote, "TestQueue")
    else:
        assert "self.torun = TestQueue(" in source
        assert callable(xdist.remote.TestQueue.lock)


def test_nothing_else_reaches_into_xdist():
    """Private names of xdist's objects appear in _xdist_internals only."""
    from pathlib import Path

    package = Path(_xdist_internals.__file__).parent
    for path in package.rglob("*.py"):
        if path.name == "_xdist_internals.py":
            continue
        text = path.read_text()
        for private in ("._active_nodes", "._session", ".nodemanager", ".torun", ".numnodes", '"worker_" +'):
            assert private not in text, f"{path.name}: {private}"
