"""pytest-xdist: what the controller hands to workers, and what it does when a worker cannot start or crashes.

Imported only when pytest-xdist is present (it stays optional at import time).

- Workers take everything from ``workerinput``: the validated config and the plan (completions included). They
  never read the YAML file or the files it names, so ``--tx ssh=...`` and ``--tx popen//chdir=...`` workers
  need only the config file itself, to collect it.
- A worker that dies before it collected cannot start, and a replacement would die the same way: xdist would
  respawn it without bound (with ``--tx`` and no ``-n``). The first such death ends the session, once, with the
  reason (``pytest.exit``); the report counts every planned sample, as not run for that reason.
- A sample whose worker crashed while running it is a ``harness_error`` that says so, not "run cut short".
- ``--dist loadscope`` and ``--dist loadfile`` group samples by problem: every sample of a session lives in
  the one config file, so xdist's own grouping would put them all on one worker.
- Workers that do not share this directory (``--tx ssh=``, ``--tx popen//chdir=``) get the plugin's path
  options joined to their values (``--humaneval-results=r.jsonl``), and any other option's existing file
  (``--junitxml=j.xml``, an earlier run's): xdist refuses any existing file among the arguments that is not
  under a synced folder (``make_reltoroot``), and the outputs exist by the time it looks.
  A remote worker (not popen) also gets ``-p no:rerunfailures``: that plugin's worker side connects to the
  controller at 127.0.0.1, which is the host's own loopback there (hosts.py).
- A host whose gateway cannot be made (ssh refuses, a wrong ``//python=``, a host lost for good when xdist
  replaces its crashed worker) is dropped, not replaced, and the run goes on with the other hosts; when none
  is left the session ends, every output written, the samples that did not run not_run with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

from ..plan import Plan
from ._xdist_internals import dsession, grouping_scheduler, node_manager
from .handoff import CONFIG_INPUT, PLAN_INPUT, config_to_json
from .hosts import Hosts
from .items import RUN_KEY, parse_item_name
from .summary import COLLECTOR_KEY, Collector

if TYPE_CHECKING:  # xdist's own types, as its hookspecs (newhooks.py) name them
    import execnet
    from xdist.remote import Producer
    from xdist.scheduler.protocol import Scheduling
    from xdist.workermanage import WorkerController

__all__ = ["XdistHooks"]


def _aggregator(config: pytest.Config) -> Collector | None:
    return config.stash.get(COLLECTOR_KEY, None)


def _problem_scope(nodeid: str) -> str | None:
    """``<file>::<task_id>`` for a sample's node id, None for any other test."""
    path, sep, name = nodeid.rpartition("::")
    key = parse_item_name(name) if sep else None
    return f"{path}::{key[0]}" if key is not None else None


class XdistHooks:
    def __init__(self) -> None:
        self._payload: tuple[Plan, str, str] | None = None
        self._collected: set[str] = set()  # workers that finished collection
        self._stopping = False
        self._hosts: Hosts | None = None

    @pytest.hookimpl
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: Sequence[execnet.XSpec]) -> None:
        # Called by xdist's NodeManager before it makes the first gateway: the manager is there to wrap.
        session = dsession(config)
        if session is not None and node_manager(session) is not None:
            self._hosts = Hosts(config, session, _aggregator(config))

    @pytest.hookimpl(trylast=True)  # after the aggregator, whose gate decides when there is one
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        ended = self._hosts is not None and self._hosts.ended is not None
        if ended and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # samples lost with the hosts must not look green

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self._hosts is not None:
            for line in self._hosts.summary_lines():
                terminalreporter.write_line(line, yellow=True)

    @pytest.hookimpl
    def pytest_configure_node(self, node: WorkerController) -> None:
        # Serialised once for all workers (at n = 200 the plan is 10 MB).
        run = node.config.stash[RUN_KEY]
        if self._payload is None or self._payload[0] is not run.plan:
            self._payload = (run.plan, run.plan.to_json(), config_to_json(run.config))
        node.workerinput[PLAN_INPUT] = self._payload[1]
        node.workerinput[CONFIG_INPUT] = self._payload[2]

    @pytest.hookimpl
    def pytest_xdist_node_collection_finished(self, node: WorkerController, ids: Sequence[str]) -> None:
        self._collected.add(node.gateway.id)
        aggregator = _aggregator(node.config)
        if aggregator is not None:
            aggregator.set_planned([nodeid.rpartition("::")[2] for nodeid in ids])

    @pytest.hookimpl
    def pytest_testnodedown(self, node: WorkerController, error: object | None) -> None:
        if error is None or self._stopping or node.gateway.id in self._collected:
            return
        self._stopping = True
        reason = f"xdist worker {node.gateway.id} could not start: {_last_line(error)}"
        aggregator = _aggregator(node.config)
        if aggregator is not None:
            aggregator.stop_reason = reason
        # Before xdist replaces the worker: pytest.exit ends the session here, and the session's end (the
        # report, every planned sample not_run with this reason) still happens.
        pytest.exit(reason, returncode=pytest.ExitCode.INTERRUPTED)

    @pytest.hookimpl
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Scheduling) -> None:
        aggregator = _aggregator(report.node.config) if hasattr(report, "node") else None
        if aggregator is not None:
            aggregator.record_crash(crashitem, str(report.longrepr))

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Producer) -> Scheduling | None:
        # --dist loadscope and loadfile: a problem's samples together (they share one file), other tests as xdist
        # groups them
        scheduler: Scheduling | None = grouping_scheduler(config.getvalue("dist"), config, log, _problem_scope)
        return scheduler


def _last_line(error: object) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else "no reason given"
