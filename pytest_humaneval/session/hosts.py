"""xdist's hosts as the benchmark needs them: what arguments a worker gets, and what a host that cannot start does.

Imported only when pytest-xdist is present (distributed.py), and installed on xdist's NodeManager by the
``pytest_xdist_setupnodes`` hook, before the first gateway is made.

- **Arguments.** xdist sends each worker the controller's arguments, and for a worker that does not share this
  directory (``--tx ssh=``, ``--tx popen//chdir=``) it first rewrites every argument that is an existing path
  relative to a synced folder, raising ``ValueError: arg ... not relative to an rsync root`` (an INTERNALERROR)
  for one that is under none (``xdist.workermanage.make_reltoroot``). The plugin's options name files that exist
  by then (its outputs are opened at session start, a baseline must exist, so must the config), so each worker's
  copy of the arguments has the plugin's path options joined to their values (``--humaneval-report=r.json``),
  which xdist passes as they are: the worker reads none of those files but the config, which it collects, and
  that one gets the path the worker finds it at (under a synced folder, as xdist would map it; else the
  controller's absolute path, where each host keeps its own copy). Any other option's value that xdist would
  refuse is joined too: pytest's ``--junitxml J`` names no file on a first run and the previous run's on the
  second, which xdist refused, so the same command ran once and then never again.
- **pytest-rerunfailures.** Its worker side connects to a server of the controller at 127.0.0.1 when it
  configures, which on another host is that host's own loopback: the worker dies (ConnectionRefusedError) and
  xdist ends with "Unexpectedly no active workers available". A remote worker (a gateway that is not popen)
  gets ``-p no:rerunfailures``: samples are never rerun, and a session that asks for reruns is refused before
  anything runs (plugin.py).
- **Hosts that cannot start.** ``NodeManager.setup_node`` raises when its gateway cannot be made (ssh refuses
  or times out: execnet's HostNotFound; a wrong ``//python=``; a host lost for good when xdist makes the
  replacement of its crashed worker): at the start that is an INTERNALERROR, mid-run the whole session ends,
  the other hosts' work with it. Here such a host is dropped: a stand-in node takes the place xdist keeps for
  it and leaves at once through an event of its own, so xdist goes on with the other hosts (the lost worker's
  queued samples go back to the others); when no host is left, the session ends with the reason, every output
  written, the samples that did not run not_run with it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ._xdist_internals import (
    active_nodes,
    drop_awaited_collection,
    node_manager,
    on_event,
    session_of,
    shutting_down,
    worker_args_while,
    wrap_setup_node,
)

if TYPE_CHECKING:  # xdist's and execnet's own types
    import execnet
    from xdist.dsession import DSession
    from xdist.workermanage import WorkerController

    from .summary import Collector

__all__ = ["CONFIG_OPTION", "PATH_OPTIONS", "Hosts", "remote_specs", "spec_text", "worker_args"]

CONFIG_OPTION = "--humaneval-config"
PATH_OPTIONS = (CONFIG_OPTION, "--humaneval-results", "--humaneval-report", "--humaneval-markdown",
                "--humaneval-html", "--humaneval-baseline", "--humaneval-generations")
NO_RERUNFAILURES = ("-p", "no:rerunfailures")
HOST_DOWN_EVENT = "humaneval_host_down"  # xdist's DSession calls worker_<event> for each event a node queues


def worker_args(args: Sequence[str], config_path: str | None, remote: bool, roots: Sequence[Path] | None = None,
                positional: Sequence[str] = ()) -> list[str]:
    """``args`` as a worker gets them: each of PATH_OPTIONS joined to its value (``--humaneval-config`` to
    ``config_path`` when given), and, for a remote worker, pytest-rerunfailures blocked. ``roots``: the synced
    folders of a worker whose arguments xdist maps to them (None: one it does not); there any other option's
    value that xdist would refuse (``refused``) is joined to its option too. ``positional``: the session's paths
    as pytest parsed them (``file_or_dir``), the arguments that are no option's value."""
    out: list[str] = []
    option: str | None = None  # a path option whose value is the next argument
    after = list(args)[list(args).index("--") + 1:] if "--" in args else []
    unclaimed = Counter(positional) - Counter(after)  # the paths among the options (the rest follow "--")
    for index, arg in enumerate(args):
        if option is not None:
            out.append(f"{option}={config_path if option == CONFIG_OPTION and config_path else arg}")
            option = None
            continue
        if arg == "--":
            out.extend(args[index:])
            break
        name, joined, value = arg.partition("=")
        if not arg.startswith("-") and unclaimed[arg] > 0:
            unclaimed[arg] -= 1  # a path the session collects: xdist maps it, as it should
            out.append(arg)
        elif roots is not None and _value_of(out) and refused(arg, roots):
            # Another option's file, an earlier run's --junitxml J say: joined, xdist passes it as it passes a
            # file that does not exist yet (the first run's: as the worker got it then).
            out[-1] = f"{out[-1]}={arg}" if out[-1].startswith("--") else f"{out[-1]}{arg}"
        elif name not in PATH_OPTIONS:
            out.append(arg)
        elif joined:
            out.append(f"{name}={config_path if name == CONFIG_OPTION and config_path else value}")
        else:
            option = name
    if option is not None:
        out.append(option)  # no value: pytest has refused it already
    return [*NO_RERUNFAILURES, *out] if remote else out


def _value_of(out: list[str]) -> bool:
    """Whether the argument after ``out`` can be the value of the last one: an option not joined to a value."""
    last = out[-1] if out else ""
    return last.startswith("-") and last not in ("-", "--") and "=" not in last


def refused(arg: str, roots: Sequence[Path]) -> bool:
    """Whether xdist refuses ``arg`` for a worker whose arguments it maps (``make_reltoroot``, which raises
    ``ValueError: arg ... not relative to an rsync root``): it names an existing path (before any ``::``) that is
    none of ``roots`` and under none of them, as xdist compares them (a relative path is under none)."""
    path = Path(arg.split("::")[0])
    try:
        if not path.exists():
            return False
    except OSError:
        return False
    return not any(path == root or path.is_relative_to(root) for root in roots)


def config_path_for(path: Path, roots: Sequence[Path], synced: bool) -> str:
    """Where a worker finds the config: under a synced folder, relative to the worker's directory as xdist maps
    it (the folder's copy is ``<chdir>/<folder name>``); else the controller's absolute path."""
    if synced:
        for root in roots:
            if path == root or root in path.parents:
                return f"{root.name}/{path.relative_to(root)}"
    return str(path)


def spec_text(spec: execnet.XSpec) -> str:
    """The --tx spec as the user wrote it (xdist prefixes its execmodel)."""
    return str(spec).removeprefix("execmodel=main_thread_only//")


def remote_specs(config: pytest.Config) -> list[str]:
    """The --tx specs that are not popen (ssh=, socket=, vagrant_ssh=), when xdist distributes."""
    import execnet  # xdist's own dependency

    if config.getoption("dist", "no") == "no":
        return []
    specs = []
    for text in config.getoption("tx", None) or []:
        count, star, rest = text.partition("*")
        spec = execnet.XSpec(rest if star and count.isdigit() else text)
        if not spec.popen:
            specs.append(text)
    return specs


class HostDown:
    """Stands in for the node of a host whose gateway could not be made: xdist's DSession holds it among its
    active nodes until it handles the event this node queued, which removes it."""

    def __init__(self, spec: execnet.XSpec, reason: str) -> None:
        self.spec = spec
        self.reason = reason

    def __repr__(self) -> str:
        return f"<HostDown {spec_text(self.spec)}>"


class Hosts:
    """Wraps the NodeManager's setup_node: the worker's arguments while xdist reads them, and hosts that fail."""

    def __init__(self, config: pytest.Config, dsession: DSession, aggregator: Collector | None) -> None:
        self.config = config
        self.dsession = dsession
        self.aggregator = aggregator
        self.manager = node_manager(dsession)
        self.down: list[str] = []  # each dropped host's reason
        self.ended: str | None = None  # why the session ended for want of hosts, if it did
        option = config.getoption("humaneval_config")
        self.config_path = Path(option).expanduser().resolve() if option else None
        wrap_setup_node(self.manager, self.setup_node)
        on_event(dsession, HOST_DOWN_EVENT, self.host_down)

    def setup_node(self, setup_node: Callable[..., WorkerController], spec: execnet.XSpec,
                   putevent: Callable[[tuple[str, dict[str, object]]], None]) -> WorkerController | HostDown:
        params = self.config.invocation_params
        synced = not spec.popen or bool(spec.chdir)  # the workers whose arguments xdist maps to synced folders
        path = (config_path_for(self.config_path, self.manager.roots, synced)
                if self.config_path is not None else None)
        args = worker_args([str(arg) for arg in params.args], path, remote=not spec.popen,
                           roots=self.manager.roots if synced else None,
                           positional=self.config.getoption("file_or_dir", None) or ())
        try:
            with worker_args_while(self.config, args):
                return setup_node(spec, putevent)
        except Exception as exc:  # noqa: BLE001 - whatever stops a gateway, the host is down, the run goes on
            why = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
            reason = f"xdist host {spec_text(spec)} could not start ({why})"
            node = HostDown(spec, reason)
            putevent((HOST_DOWN_EVENT, {"node": node}))
            return node

    def host_down(self, node: HostDown) -> None:
        """On the controller's loop (DSession.loop_once): the stand-in leaves. Samples go on only on a worker
        xdist has not told to finish (it tells every worker as soon as it has handed out every sample); when no
        such worker is left, the session ends once those finish, and what did not run is not_run, with why."""
        active = active_nodes(self.dsession)
        active.discard(node)
        self.down.append(node.reason)
        going_on = [other for other in active if not isinstance(other, HostDown) and not shutting_down(other)]
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        drop_awaited_collection(self.dsession, bool(going_on))  # a host down before it collected
        if going_on:
            if terminal is not None:
                terminal.write_line(f"humaneval: {node.reason}: dropped, the run goes on with {len(going_on)} "
                                    "other worker(s)", yellow=True)
            return
        if any(isinstance(other, HostDown) for other in active):
            return  # the last stand-in's event decides
        reason = f"{node.reason}, and no other xdist worker is left to take its samples"
        self.ended = reason
        if self.aggregator is not None and self.aggregator.stop_reason is None:
            self.aggregator.stop_reason = f"{reason}: this sample did not run"
        if terminal is not None:
            terminal.write_line(f"humaneval: {reason}: the session ends", red=True)
        self.dsession.triggershutdown()  # (the workers finishing now end it, instead of xdist's RuntimeError)
        session = session_of(self.dsession)
        if session is not None:
            session.shouldfail = reason  # a stopped run: every output says so, a gate fails on it

    def summary_lines(self) -> list[str]:
        return [f"humaneval: {reason}: dropped" for reason in self.down]
