"""pytest-xdist's private parts that the plugin leans on, in one place (pytest_httpx's ``_httpx_internals.py``
habit): nothing else in the package reaches into xdist beyond its hooks and public classes.

Each accessor says what it expects of xdist and degrades (None, or no effect) where xdist is not what it looks
like; ``tests/test_xdist_internals.py`` checks every expectation against the installed xdist and pins the versions
they were read from (``KNOWN_VERSIONS``). What each is for:

- the controller's ``DSession``: its ``nodemanager`` (whose ``setup_node`` ``hosts.Hosts`` wraps, and whose
  ``roots`` are the synced folders), ``_active_nodes`` (the nodes it waits for), ``_session``, ``sched`` (its
  ``numnodes`` and ``collection_is_completed``: the collections it waits for), and the ``worker_<event>``
  methods its loop calls for each event a node queues;
- ``NodeManager.setup_node(spec, putevent)``, which makes each node (``wrap_setup_node``), and
  ``WorkerController.setup``, which reads the arguments a worker gets from ``config.invocation_params.args``
  while it runs and nowhere after (``worker_args_while``);
- a node's ``shutting_down`` (``WorkerController``);
- a worker's queue of the items it was sent and will run, ``torun`` of its worker plugin (``TestQueue``, with
  ``lock()``), which ``ahead.XdistQueue`` reads to feed its pool;
- the schedulers of ``--dist loadscope`` and ``--dist loadfile``, which group tests by ``_split_scope(nodeid)``
  (``grouping_scheduler``).

xdist itself is imported only by the functions that need its classes: this module is imported where xdist may be
absent (``ahead.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

__all__ = ["KNOWN_VERSIONS", "active_nodes", "drop_awaited_collection", "dsession", "grouping_scheduler",
           "node_manager", "on_event", "session_of", "shutting_down", "worker_args_while", "worker_queue",
           "wrap_setup_node"]

KNOWN_VERSIONS = ("3.6", "3.7", "3.8")  # the minor versions these accessors were read from and are tested on


def dsession(config: pytest.Config) -> Any:
    """The controller's DSession (xdist registers it under this name), or None."""
    return config.pluginmanager.get_plugin("dsession")


def node_manager(session: Any) -> Any:
    """The DSession's NodeManager, once it has made one (it does before the first gateway), else None."""
    return getattr(session, "nodemanager", None)


def on_event(session: Any, event: str, handler: Callable[..., None]) -> None:
    """Have the DSession's loop call ``handler(**kwargs)`` for each ``(event, kwargs)`` a node queues."""
    setattr(session, "worker_" + event, handler)


def active_nodes(session: Any) -> set[Any]:
    """The nodes the DSession waits for (it ends when none is left)."""
    nodes: set[Any] = session._active_nodes
    return nodes


def shutting_down(node: Any) -> bool:
    """Whether xdist has told the node to finish (True when it cannot say)."""
    return bool(getattr(node, "shutting_down", True))


def drop_awaited_collection(session: Any, going_on: bool) -> None:
    """A node that will never collect: xdist's schedulers wait for one collection per --tx spec, so wait for one
    fewer, and schedule as the DSession does when the last collection arrives (when others go on)."""
    sched = getattr(session, "sched", None)
    if sched is not None and not sched.collection_is_completed and getattr(sched, "numnodes", 0) > 0:
        sched.numnodes -= 1
        if going_on and sched.collection_is_completed:
            sched.schedule()


def session_of(session: Any) -> pytest.Session | None:
    """The pytest session the DSession runs, while it runs one."""
    return getattr(session, "_session", None)


def worker_queue(config: pytest.Config) -> Any:
    """A worker's queue of the item indices it will run (``with queue.lock() as queued``), or None."""
    return next((plugin.torun for plugin in config.pluginmanager.get_plugins()
                 if callable(getattr(getattr(plugin, "torun", None), "lock", None))), None)


def wrap_setup_node(manager: Any, wrapper: Callable[[Callable[..., Any], Any, Any], Any]) -> None:
    """Have the NodeManager make each node through ``wrapper(setup_node, spec, putevent)``, where ``setup_node`` is
    its own (which raises when the node's gateway cannot be made)."""
    original = manager.setup_node
    manager.setup_node = lambda spec, putevent: wrapper(original, spec, putevent)


@contextmanager
def worker_args_while(config: pytest.Config, args: Sequence[str]) -> Iterator[None]:
    """The arguments the worker being set up gets: xdist reads them from ``config.invocation_params.args`` in
    ``WorkerController.setup`` (and nowhere after), so they are the controller's own again once it returns."""
    params = config.invocation_params
    config.invocation_params = dataclasses.replace(params, args=tuple(args))
    try:
        yield
    finally:
        config.invocation_params = params


def grouping_scheduler(dist: str, config: pytest.Config, log: Any, scope_of: Callable[[str], str | None]) -> Any:
    """xdist's scheduler of ``--dist loadscope`` or ``--dist loadfile`` whose group of a test is ``scope_of(nodeid)``
    when that says one, else its own; None for any other ``dist``."""
    from xdist.scheduler import LoadFileScheduling, LoadScopeScheduling

    base = {"loadscope": LoadScopeScheduling, "loadfile": LoadFileScheduling}.get(dist)
    if base is None:
        return None

    class Grouping(base):  # type: ignore[valid-type,misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid) or str(super()._split_scope(nodeid))

    return Grouping(config, log)
