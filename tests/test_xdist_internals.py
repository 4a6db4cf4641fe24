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


def test_a_worker_gets_the_arguments_setup_reads():
    """worker_args_while: xdist reads a worker's arguments from config.invocation_params.args while it sets the node
    up (and a wrapped setup_node runs around that)."""
    assert "self.config.invocation_params.args" in inspect.getsource(xdist.workermanage.WorkerController.setup)
    assert "self.setup_node(" in inspect.getsource(xdist.workermanage.NodeManager.setup_nodes)


def test_grouping_schedulers_split_by_scope():
    """grouping_scheduler: loadscope and loadfile group tests by _split_scope(nodeid), which the plugin's override
    answers for a sample (its problem) and leaves to xdist for any other test."""
    for dist, scheduler in (("loadscope", xdist.scheduler.LoadScopeScheduling),
                            ("loadfile", xdist.scheduler.LoadFileScheduling)):
        assert any("self._split_scope(" in inspect.getsource(cls) for cls in scheduler.__mro__[:-1]), dist
        assert list(inspect.signature(scheduler._split_scope).parameters) == ["self", "nodeid"], dist


def test_grouping_scheduler_groups_samples_by_problem(pytester):
    config = pytester.parseconfig("--tx", "popen")
    for dist, other in (("loadscope", "tests/test_x.py::TestY"), ("loadfile", "tests/test_x.py")):
        made = _xdist_internals.grouping_scheduler(dist, config, None,
                                                   lambda nodeid: "run.yaml::A" if "[" in nodeid else None)
        assert made._split_scope("run.yaml::A[3]") == "run.yaml::A"
        assert made._split_scope("tests/test_x.py::TestY::test_z") == other
    assert _xdist_internals.grouping_scheduler("load", config, None, lambda nodeid: None) is None


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
        for private in ("._active_nodes", "._session", ".nodemanager", ".torun", ".numnodes", '"worker_" +',
                        ".setup_node = ", "invocation_params = ", "_split_scope", "xdist.scheduler import"):
            assert private not in text, f"{path.name}: {private}"
