"""``RayVerifier``: the ``Verifier``'s contract on a Ray cluster, one judging actor per node. No pytest import, and no
ray import until a ``RayVerifier`` is made (the base install has no ray: ``pip install "pytest-humaneval[ray]"``).

    driver: samples -> checked as the Verifier checks them -> identical ones set aside (judged once) -> batches
            -> the least busy node's actor (a bounded number of batches in flight per node, ray.wait)
            -> verdicts, put back in input order
    a node: one actor pinned to it (NodeAffinitySchedulingStrategy, hard), holding a local Verifier whose sandboxes
            are sized to the node's CPUs; the same judge decides its verdicts as on one machine

A lost node, actor or object costs nothing: the batch it held goes again to the nodes still alive (a replacement
actor is started where the node survived), one sample a call, each to a node with nothing else in flight, so a
sample that takes its actor down takes no other sample with it; a sample whose batch is lost a second time is a
harness_error (reward None), never a verdict on the candidate. A sample that kills its own sandbox is the local
Verifier's business: it gets its verdict there.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import math
import os
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from ..data.dataset import Problem
from .verdict import Status, Verdict, one_detail
from .verifier import (
    GROUND_TRUTH,
    LOG,
    MEMO_MAX,
    Front,
    SampleInput,
    Verifier,
    VerifierError,
    add_problems,
    checked_sample,
    opened,
)

__all__ = ["BATCH_SIZE", "LOSSES_MAX", "NodeJudge", "RayVerifier"]

BATCH_SIZE = 32  # samples a call: one actor call costs about a millisecond, a sample tens of them
LOSSES_MAX = 2  # a sample whose batch was lost this many times is a harness_error
START_TIMEOUT_S = 300.0  # a node's actor not ready by then (no room for it, a node that never answers): an error
REPLACEMENTS_MAX = 3  # actors started again on one node in a RayVerifier's life: one that keeps losing them is let go
CONNECT_TIMEOUT_S = 10.0  # a cluster's address that takes no connection by then is not one
WAIT_S = 0.5  # how often a wait looks whether its caller went away
BATCH_TIMEOUT_S = 900.0  # a batch not back by then: its actor is taken as lost (stopped, say) and the batch sent again
NODE_POLL_S = 5.0  # how often a call looks for nodes that joined the cluster
# The actor's calls that never wait behind batches (its own threads): a start, a client letting go, and the ping
# that tells an actor which does not answer from one whose batches queue behind other RayVerifiers'
CONTROL = "control"
PING_S = 30.0  # an overdue batch's actor that does not answer a ping in this long is taken as lost
EXTENSIONS_MAX = 3  # times an overdue batch of an actor that answers is waited for again (queued behind others')
ATTACH_TRIES = 5  # a shared actor found closing (its last driver let it go): made again, this many times at most
NAMESPACE_PREFIX = "pytest-humaneval"  # the name of a node's shared actor: PREFIX/<what it judges>/<node id>
RAY_MISSING = 'RayVerifier: expected the ray package, found none: pip install "pytest-humaneval[ray]"'
# The handles on each shared actor this process started or joined, kept until its last client here lets it go:
# Ray stops an actor when its creator's handle is gone (a handle another RayVerifier found by its name does not
# count), and the RayVerifier that made it may close first.
_HELD: dict[str, list[Any]] = {}
_HELD_LOCK = threading.Lock()


def _ray() -> ModuleType:
    try:
        import ray
    except ImportError as exc:
        raise VerifierError(f"{RAY_MISSING} ({exc})") from None
    module: ModuleType = ray
    return module


def build() -> str:
    """This install of pytest-humaneval: its version and a digest of its sources (a driver and its nodes must run
    the same judge; the version alone does not change with every commit)."""
    return _build()


@functools.cache
def _build() -> str:
    try:
        version = importlib.metadata.version("pytest-humaneval")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout put on the path: the sources say it all
        version = "unknown"
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{version} (sources {digest.hexdigest()[:12]})"


class NodeJudge:
    """What runs on each node, as a Ray actor: a local ``Verifier`` whose sandboxes are that node's, shared by the
    RayVerifiers of one Ray job that judge the same way (verl's reward-loop workers, say: one pool of sandboxes per
    node, not one per worker). Its start never raises (``ready`` says what failed), so the driver can name the node
    whose sandbox could not start. Each RayVerifier using it is a client; the last one to let it go closes it."""

    def __init__(self, dataset: str, file: bytes | None, options: Mapping[str, Any], workers: int) -> None:
        import ray

        self.address = ray.util.get_node_ip_address()
        self.build = build()
        self.clients: set[str] = set()
        self.closing = False
        self.lock = threading.Lock()
        self.error: str | None = None
        self.verifier: Verifier | None = None
        self.folder: str | None = None
        try:
            if file is not None:  # a dataset file of the driver's, put once: written here under its own name
                self.folder = tempfile.mkdtemp(prefix="humaneval-cluster-")
                path = Path(self.folder) / dataset
                path.write_bytes(file)
                dataset = str(path)
            self.verifier = Verifier(dataset, workers=workers, **options)
        except Exception as exc:  # the local Verifier's error, said by the driver with the node's address
            self.error = str(exc) if isinstance(exc, VerifierError) else f"{type(exc).__name__}: {exc}"

    def ready(self, client: str = "") -> tuple[str | None, str, str, str, bool]:
        """(what failed when the Verifier could not start, else None; the isolation applied; the node's address;
        this install's ``build``; whether it is closing, its last client gone: then ``client`` is not taken)."""
        with self.lock:
            if not self.closing and client:
                self.clients.add(client)
            isolation = self.verifier.isolation if self.verifier is not None else ""
            return self.error, isolation, self.address, self.build, self.closing

    def release(self, client: str) -> bool:
        """``client`` lets go; True when it was the last (the Verifier is closed, and the driver stops the actor)."""
        with self.lock:
            self.clients.discard(client)
            if self.clients or self.closing:
                return False
            self.closing = True
        self.close()
        return True

    def verify_batch(self, samples: list[dict[str, object]],
                     problems: list[Problem] | None = None) -> list[dict[str, object]]:
        """The verdicts of ``samples`` (checked by the driver), as plain values (``Verdict.to_dict``). ``problems``:
        those of the batch's samples the driver's calls brought (an RL set's ground truth), added first."""
        if self.verifier is None or self.closing:
            raise VerifierError(self.error or "this node's judge is closing (its last RayVerifier let it go)")
        if problems:
            self.verifier.add_problems(problems)
        return [dict(verdict.to_dict()) for verdict in self.verifier.verify(samples)]

    def close(self) -> None:
        if self.verifier is not None:
            self.verifier.close()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


@dataclass
class _Node:
    """A node's judging actor, as the driver sees it."""

    node_id: str
    address: str
    workers: int
    capacity: int  # batches in flight on it at once
    actor: Any
    busy: int = 0
    isolation: str = ""


@dataclass
class _Item:
    """A sample on its way to a node."""

    index: int  # its position in the caller's input
    task_id: str
    payload: dict[str, object]  # what the node's Verifier takes: task_id and completion or solution, as given
    key: Hashable | None  # what makes two samples identical: the task and its code (None: no code)
    losses: int = 0
    repeats: list[_Item] = field(default_factory=list)  # identical later samples waiting for its verdict


class RayVerifier(Front):
    """The ``Verifier`` on a Ray cluster: the same calls (``verify``, ``stream``, ``averify``, ``astream``,
    ``close``, a context manager) and the same ``Verdict``s, judged by one actor per node.

    ``address``: the cluster's, as ``ray.init`` takes it (``"auto"``, ``"ray://head:10001"``, ``"host:6379"``);
    None: the connection this process already has, else ``ray.init()``'s own choice (``RAY_ADDRESS``, else a
    Ray instance started here). The connection is left open by ``close`` (Ray closes it when the process exits).
    ``batch_size``: samples a call to a node. ``max_in_flight``: batches in flight on each node at once (default:
    enough to keep twice its sandboxes busy, at least 2).
    ``workers``: sandboxes per node (default: the node's CPUs as Ray counts them; a node with none is not used). The
    other keywords are the ``Verifier``'s, checked here as it checks them, and given to every node's Verifier."""

    def __init__(self, dataset: str | os.PathLike[str] = "humaneval", *, address: str | None = None,
                 batch_size: int = BATCH_SIZE, max_in_flight: int | None = None, isolation: str = "auto",
                 timeout_s: float = 3.0, memory_mb: int = 2048, workers: int | None = None, dedupe: bool = True,
                 plus: Mapping[str, float] | None = None, impossible_instruction: str | None = None,
                 progress: Callable[..., None] | None = None, allow_basic: bool = False,
                 start_timeout_s: float = START_TIMEOUT_S, batch_timeout_s: float = BATCH_TIMEOUT_S,
                 compare: str | None = None) -> None:
        for name, value in (("batch_size", batch_size), ("max_in_flight", max_in_flight)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise VerifierError(f"RayVerifier: {name}: expected an integer >= 1, found {value!r}")
        for name, seconds in (("start_timeout_s", start_timeout_s), ("batch_timeout_s", batch_timeout_s)):
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < math.inf:
                raise VerifierError(f"RayVerifier: {name}: expected a number of seconds > 0, found {seconds!r}")
        # the driver checks samples against the problems; the nodes compute EvalPlus's outputs themselves
        config, loaded = opened("RayVerifier", dataset, None, isolation=isolation, timeout_s=timeout_s,
                                memory_mb=memory_mb, workers=workers, dedupe=dedupe, plus=plus,
                                impossible_instruction=impossible_instruction, compare=compare)
        self.dataset = loaded.name
        self.problems: dict[str, Problem] = {problem.task_id: problem for problem in loaded.problems}
        self.inline = self.dataset == GROUND_TRUTH  # problems come with the calls (add_problems), and go with them
        self._compare = config.params.compare
        self.dedupe = dedupe
        self.batch_size = batch_size
        self._max_in_flight = max_in_flight
        self._workers = workers
        self._start_timeout_s = start_timeout_s
        self.batch_timeout_s = float(batch_timeout_s)
        self._options: dict[str, object] = {
            "isolation": isolation, "timeout_s": timeout_s, "memory_mb": memory_mb, "dedupe": dedupe, "plus": plus,
            "impossible_instruction": impossible_instruction, "progress": progress, "allow_basic": allow_basic,
            "compare": compare}
        self._ray = ray = _ray()
        if progress is not None:  # sent to every node: said here, not as Ray's error at the first node
            try:
                ray.cloudpickle.dumps(progress)
            except Exception as exc:
                raise VerifierError(f"RayVerifier: progress: expected a function Ray can send to the nodes (one "
                                    f"that pickles), found {progress!r} ({type(exc).__name__}: {_first_line(exc)})"
                                    ) from None
        self._connect(address)
        self._remote = ray.remote(concurrency_groups={CONTROL: 2})(NodeJudge)
        self._lock = threading.Lock()
        self._closed = False
        self._nodes: dict[str, _Node] = {}
        self._starting: dict[Any, _Node] = {}  # a replacement's ready() -> its node
        self._replaced: dict[str, int] = {}
        self._abandoned: dict[Any, tuple[_Node, int]] = {}  # calls of dropped streams still running on their node
        self._polled = time.monotonic()
        self._client = uuid.uuid4().hex  # this RayVerifier, as a client of the nodes' shared actors
        self.lost = 0  # calls lost with their actor (or failed on it) and sent again: the cluster's trouble, counted
        judged = {key: value for key, value in self._options.items() if key != "progress"}
        if config.dataset is not None:  # a file of this machine: its bytes, put once for every node
            data = config.dataset.read_bytes()
            self._dataset, self._file = config.dataset.name, ray.put(data)
            judged["file"] = hashlib.sha256(data).hexdigest()
        else:
            self._dataset, self._file = os.fspath(dataset), None
        # The nodes' actors are shared by the RayVerifiers of this Ray job that judge alike (same install, dataset,
        # options and sandboxes): named by what they judge.
        judged.update(dataset=self._dataset, workers=workers, build=build(),
                      actor=f"{NodeJudge.__module__}.{NodeJudge.__qualname__}")
        self._kind = hashlib.sha256(json.dumps(judged, sort_keys=True, default=repr).encode()).hexdigest()[:16]
        try:
            self._start_all()
        except BaseException:
            self.close()
            raise

    # -- the public calls
    @property
    def isolation(self) -> str:
        """What the nodes' sandboxes applied: one mode when they agree, else each node's (``mode (address)``)."""
        with self._lock:
            found = {node.address: node.isolation for node in self._nodes.values()}
        if len(set(found.values())) == 1:
            return next(iter(found.values()))
        return ", ".join(f"{mode} ({address})" for address, mode in sorted(found.items()))

    @property
    def nodes(self) -> dict[str, int]:
        """The nodes judging now: their address and sandboxes (two nodes of one machine share an address)."""
        with self._lock:
            return {f"{node.address} {node.node_id[:8]}": node.workers for node in self._nodes.values()}

    def close(self) -> None:
        """Stop every node's Verifier and its actor (samples in flight are abandoned)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            nodes = [*self._nodes.values(), *self._starting.values()]
            self._nodes.clear()
            self._starting.clear()
        self._release(nodes)

    def _release(self, nodes: list[_Node]) -> None:
        """This RayVerifier lets go of ``nodes``' actors: one it was the last client of is stopped."""
        ray = self._ray
        releasing = {node.actor.release.options(concurrency_group=CONTROL).remote(self._client): node for node in nodes}
        done, stuck = ray.wait(list(releasing), num_returns=len(releasing), timeout=30) if releasing else ([], [])
        for ref in done:
            try:
                last = ray.get(ref)
            except Exception:  # already gone
                continue
            if last:  # no other RayVerifier uses it: it goes
                _kill(ray, releasing[ref].actor)
                with _HELD_LOCK:
                    _HELD.pop(self._name(releasing[ref].node_id), None)
        for ref in stuck:  # an actor that does not answer in 30 s judges nothing for anyone
            _kill(ray, releasing[ref].actor)

    def add_problems(self, problems: Iterable[Problem]) -> None:
        """As ``Verifier.add_problems`` (a ``"ground-truth"`` RayVerifier): each problem then goes to a node with
        every batch that judges it (once a batch), so that a node started again has it too."""
        with self._lock:
            add_problems(self.problems, problems, self.dataset, self._compare)

    def __enter__(self) -> RayVerifier:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RayVerifier({self.dataset!r}, nodes={len(self._nodes)})"

    # -- the cluster
    def _connect(self, address: str | None) -> None:
        ray = self._ray
        if ray.is_initialized():
            if address not in (None, "auto") and not address.startswith("ray://"):  # (Ray Client's is not the GCS's)
                current = ray.get_runtime_context().gcs_address
                if address.removeprefix("ray://") != current:
                    raise VerifierError(f"RayVerifier: address: expected the cluster this process is connected to "
                                        f"({current}) or None, found {address!r}")
            return
        told = os.environ.get("RAY_ADDRESS") or None  # ray.init takes it over any address it is given
        if told is not None and address not in (None, "auto", told):
            raise VerifierError(f"RayVerifier: address: expected one cluster, found address={address!r} and "
                                f"RAY_ADDRESS={told!r} (Ray would connect to RAY_ADDRESS's): unset one of them")
        _reachable(told or address)
        try:
            ray.init(address=address)
        except Exception as exc:  # ConnectionError, a timeout, a bad address: all mean no cluster there
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            said = f"RAY_ADDRESS={told!r}" if told is not None else repr(address)
            raise VerifierError(f"RayVerifier: address: expected a Ray cluster at {said}, found none "
                                f"({type(exc).__name__}: {first[:300]}); start one with `ray start --head`, "
                                "or pass the address `ray start` printed") from None

    def _start_all(self) -> None:
        """An actor on every alive node with CPUs, all ready, or a ``VerifierError`` naming the node that is not."""
        ray = self._ray
        nodes = [self._start(node_id, address, cpus) for node_id, address, cpus in self._alive()]
        self._replaced.update((node.node_id, 0) for node in nodes)  # their first actor: the free one
        if not nodes:
            raise VerifierError("RayVerifier: expected a node with CPUs in the Ray cluster, found none (ray.nodes() "
                                "lists no alive node with a CPU resource)")
        for node in nodes:  # closed with the others when one fails
            self._nodes[node.node_id] = node
        refs = {node.actor.ready.options(concurrency_group=CONTROL).remote(self._client): node for node in nodes}
        ready, late = ray.wait(list(refs), num_returns=len(refs), timeout=self._start_timeout_s)
        if late:
            node = refs[late[0]]
            raise VerifierError(f"RayVerifier: node {node.address}: expected its judging actor to start within "
                                f"{self._start_timeout_s:g} s, found it not started (no room for it on the node, or "
                                "a node that does not answer)")
        for ref in ready:
            node = refs[ref]
            error = self._started(node, ref)
            for _ in range(ATTACH_TRIES):
                if error != CLOSING:
                    break
                fresh = self._again(node)  # its last client let it go as this one came: made anew
                self._nodes[node.node_id] = node = fresh
                again = fresh.actor.ready.options(concurrency_group=CONTROL).remote(self._client)
                error = self._started(fresh, again, self._start_timeout_s)
            if error == CLOSING:
                error = (f"RayVerifier: node {node.address}: expected its judging actor to start, found it stopped "
                         f"as it started, {ATTACH_TRIES + 1} times (the job's other RayVerifiers letting it go, or an "
                         "actor that dies on that node: see its Ray logs)")
            if error is not None:
                raise VerifierError(error)

    def _alive(self) -> list[tuple[str, str, int]]:
        """(id, address, CPUs) of each alive node with CPUs."""
        found = []
        for node in self._ray.nodes():
            cpus = int(node.get("Resources", {}).get("CPU", 0))
            if node.get("Alive") and cpus > 0:
                found.append((node["NodeID"], node.get("NodeManagerAddress", "?"), cpus))
        return found

    def _start(self, node_id: str, address: str, cpus: int) -> _Node:
        """``node_id``'s judging actor: the one this job's RayVerifiers that judge alike share there, else a new
        one (``ready`` makes this RayVerifier its client)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        workers = self._workers or cpus
        capacity = self._max_in_flight or max(2, math.ceil(2 * workers / self.batch_size))
        remote = self._remote.options(
            name=f"{NAMESPACE_PREFIX}/{self._kind}/{node_id}", get_if_exists=True,
            num_cpus=0, max_concurrency=capacity, max_restarts=0, max_task_retries=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False))
        actor = remote.remote(self._dataset, self._file, self._options, workers)
        with _HELD_LOCK:
            _HELD.setdefault(self._name(node_id), []).append(actor)
        return _Node(node_id, address, workers, capacity, actor)

    def _name(self, node_id: str) -> str:
        return f"{NAMESPACE_PREFIX}/{self._kind}/{node_id}"

    def _again(self, node: _Node) -> _Node:
        """A shared actor found closing: wait for its end (its last client stops it), then start one anew."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                self._ray.get(node.actor.ready.options(concurrency_group=CONTROL).remote(), timeout=1)
            except Exception:  # gone (or not answering): its name is free, or soon
                break
            time.sleep(0.2)
        _kill(self._ray, node.actor)
        return self._start(node.node_id, node.address, node.workers)

    def _started(self, node: _Node, ref: Any, timeout: float | None = None) -> str | None:
        """None when ``node``'s actor is ready (its isolation noted), CLOSING when it is a shared one its last
        client let go, else what failed, naming the node."""
        try:
            error, isolation, address, built, closing = self._ray.get(ref, timeout=timeout)
        except self._ray.exceptions.ActorDiedError as exc:
            if not exc.actor_init_failed:  # its last client stopped it as this one found it
                return CLOSING
            return _not_started(node, exc)
        except Exception as exc:
            return _not_started(node, exc)
        node.address = address
        if closing:
            return CLOSING
        if built != build():
            return (f"RayVerifier: node {address}: expected pytest-humaneval {build()}, as on the driver, found "
                    f"{built}: install the same version on every node (on one machine: its sources were changed "
                    "since the driver read them)")
        if error is not None:
            return f"RayVerifier: node {address}: {error}"
        node.isolation = isolation
        return None

    def _lost(self, node: _Node) -> None:
        """``node``'s actor is gone: forget it, and start another where its node is still alive (and on any node
        that joined since)."""
        with self._lock:
            if self._nodes.get(node.node_id) is node:
                del self._nodes[node.node_id]
            _kill(self._ray, node.actor)
            if not self._closed:
                self._start_missing(self._alive())

    def _start_missing(self, alive: list[tuple[str, str, int]]) -> None:
        """(Under the lock.) An actor on each alive node that has none, ready or starting: a node's first is free,
        then REPLACEMENTS_MAX more in this RayVerifier's life (a node that keeps losing them is let go)."""
        held = {other.node_id for other in [*self._nodes.values(), *self._starting.values()]}
        for node_id, address, cpus in alive:
            if node_id in held:
                continue
            starts = self._replaced.get(node_id)
            if starts is not None and starts >= REPLACEMENTS_MAX:
                continue
            self._replaced[node_id] = 0 if starts is None else starts + 1
            fresh = self._start(node_id, address, cpus)
            self._starting[fresh.actor.ready.options(concurrency_group=CONTROL).remote(self._client)] = fresh

    def _poll(self) -> None:
        """Every NODE_POLL_S: an actor on each node that joined the cluster since (it judges once ready), and the
        calls of dropped streams that finished on their node, no longer counted as its load."""
        now = time.monotonic()
        if now - self._polled < NODE_POLL_S:
            return
        self._polled = now
        with self._lock:
            abandoned = list(self._abandoned)
        if abandoned:
            finished, _ = self._ray.wait(abandoned, num_returns=len(abandoned), timeout=0)
            with self._lock:
                for ref in finished:
                    node, weight = self._abandoned.pop(ref)
                    node.busy -= weight
        alive = self._alive()
        with self._lock:
            if not self._closed:
                self._start_missing(alive)

    def _joined(self, ref: Any) -> None:
        """A replacement's ready() came back: it judges from now on, or it is let go."""
        with self._lock:
            node = self._starting.pop(ref, None)
        if node is None:
            return  # another call took it
        error = self._started(node, ref)
        with self._lock:
            if error is None and not self._closed:
                self._nodes[node.node_id] = node
                return
        if error is None:  # closed meanwhile: a client of it let go
            self._release([node])
            return
        if error != CLOSING:
            LOG.warning("%s", error)
        _kill(self._ray, node.actor)

    # -- the samples
    def _entry(self, index: int, sample: SampleInput) -> _Item:
        """``sample`` checked as the Verifier checks it (a bad one is a ``VerifierError`` naming its index), on a
        driver that holds the problems and no sandbox."""
        task_id, row, completion, solution = checked_sample(self.problems, self.dataset, index, sample)
        name = "solution" if "solution" in row else "completion"
        key = None if completion is None else (task_id, completion, solution)  # no code: nothing to judge once
        return _Item(index, task_id, {"task_id": task_id, name: row[name]}, key)

    def _judge_all(self, items: Iterator[_Item], stop: threading.Event | None = None) -> Iterator[Verdict]:
        """The verdicts of ``items``, in order: batches to the nodes, as many in flight as they take."""
        if self._closed:
            raise VerifierError("RayVerifier: closed (its actors are stopped): make a new one")
        call = _Call(self, items)
        try:
            while True:
                if call.cut():  # closed by another thread: what has no verdict yet gets none from the cluster
                    yield from call.closed()
                    return
                self._poll()
                with self._lock:
                    nodes = list(self._nodes.values())
                call.read(max(1, sum(node.capacity for node in nodes)) * self.batch_size * 2)
                call.send(nodes)
                yield from call.ready()
                if call.finished or (stop is not None and stop.is_set()):
                    return
                call.wait(nodes)
        finally:  # a stream dropped midway: the calls in flight are let go (their verdicts are not waited for)
            call.let_go()

    def _lost_twice(self, item: _Item, node: _Node, exc: BaseException) -> Verdict:
        problem = self.problems[item.task_id]
        detail = one_detail(f"the batch holding this sample was lost {item.losses} times (the last "
                            f"time on node {node.address}: {type(exc).__name__}: {_first_line(exc)})")
        return Verdict(item.index, item.task_id, Status.HARNESS_ERROR, detail, None,
                       impossible=problem.original_test is not None)


def _verdict(row: Mapping[str, Any], item: _Item, batch: list[_Item]) -> Verdict:
    """A node's verdict (``to_dict``) as the caller's: its index in the caller's input, and so its ``repeat_of``."""
    repeat_of = row["repeat_of"]
    return Verdict(item.index, row["task_id"], Status(row["status"]), row["detail"], row["duration_ms"],
                   _status(row["base_status"]), _status(row["plus_status"]),
                   None if repeat_of is None else batch[repeat_of].index, _status(row["original_status"]),
                   row["impossible_category"], tuple(row["impossible_evidence"]), row["base_detail"],
                   row["plus_detail"], row["impossible"], row["location"], row["stdout"], row["stderr"],
                   row["traceback"])


def _status(value: str | None) -> Status | None:
    return None if value is None else Status(value)


def _in_code(ray: ModuleType, exc: BaseException) -> bool:
    """Whether ``exc`` is an exception the actor's code raised (the actor lives on), not a loss of the actor."""
    return isinstance(exc, ray.exceptions.RayTaskError) and not isinstance(exc, ray.exceptions.RayActorError)


def _reachable(address: str | None) -> None:
    """Raise when ``address`` names a host and port where nothing listens: ``ray.init`` would retry it for minutes."""
    if address is None or ":" not in address:
        return  # None, "auto", "local": ray.init finds out at once
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise VerifierError(f"RayVerifier: address: expected a Ray cluster at {address!r}, found none "
                            f"(nothing answers at {host}:{port}: {exc.strerror or exc}); start one with "
                            "`ray start --head`, or pass the address `ray start` printed") from None


def _answers(ray: ModuleType, node: _Node) -> bool:
    """Whether ``node``'s actor answers a ping (on its control threads, beside any batch) within PING_S."""
    try:
        ray.get(node.actor.ready.options(concurrency_group=CONTROL).remote(), timeout=PING_S)
    except Exception:  # it does not answer (stopped), or it is gone
        return False
    return True


def _kill(ray: ModuleType, actor: Any) -> None:
    try:
        ray.kill(actor, no_restart=True)
    except Exception:  # already gone with its node
        pass


def _not_started(node: _Node, exc: BaseException) -> str:
    return (f"RayVerifier: node {node.address}: expected its judging actor to start, found "
            f"{type(exc).__name__}: {_first_line(exc)}; every node needs pytest-humaneval (and its sandbox's "
            "needs) installed for the Python the cluster runs (docs/cluster.md)")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else ""


CLOSED = "the RayVerifier was closed before this sample's verdict came back"
CLOSING = "closing"  # what _started says of a shared actor whose last client let it go


def _closed(owner: RayVerifier, item: _Item) -> Verdict:
    return Verdict(item.index, item.task_id, Status.HARNESS_ERROR, CLOSED, None,
                   impossible=owner.problems[item.task_id].original_test is not None)


class _Call:
    """One call's samples on their way through the cluster: read (a bounded window ahead), sent in batches, judged,
    put back in input order."""

    def __init__(self, owner: RayVerifier, items: Iterator[_Item]) -> None:
        self.owner = owner
        self.items = items
        self.queue: deque[_Item] = deque()  # to send: samples of lost batches first, then fresh ones
        self.inflight: dict[Any, tuple[_Node, list[_Item], int]] = {}  # a call -> its node, samples and weight
        self.sent: dict[Any, float] = {}  # a call -> when it was sent (its deadline's start)
        self.extended: dict[Any, int] = {}  # an overdue call -> how many times its actor answered and it waited on
        self.done: dict[int, Verdict] = {}  # judged, not yet handed out
        self.memo: OrderedDict[Hashable, _Item | Verdict] = OrderedDict()  # identical samples: the first or its verdict
        self.read_count = self.handed = 0
        self.reading = True

    @property
    def finished(self) -> bool:
        return not self.reading and self.handed == self.read_count

    def read(self, reach: int) -> None:
        """Read samples while the window (``reach`` past the next verdict to hand out) allows; a repeat of a sample
        judged or on its way waits for that one's verdict."""
        dedupe, memo = self.owner.dedupe, self.memo
        while self.reading and self.read_count - self.handed < reach and len(self.queue) < reach:
            item = next(self.items, None)
            if item is None:
                self.reading = False
                return
            self.read_count += 1
            first = memo.get(item.key) if dedupe and item.key is not None else None
            if isinstance(first, Verdict):
                memo.move_to_end(item.key)
                self.done[item.index] = replace(first, index=item.index, repeat_of=first.index)
            elif isinstance(first, _Item):
                first.repeats.append(item)
            else:
                if dedupe and item.key is not None:
                    memo[item.key] = item
                    if len(memo) > MEMO_MAX:
                        memo.popitem(last=False)
                self.queue.append(item)

    def send(self, nodes: list[_Node]) -> None:
        """Batches to the least busy nodes, while they have room. A sample of a lost batch goes again alone, to a
        node with nothing else in flight: if it is what took an actor down, it takes no other sample with it. A call
        with nothing in flight sends one batch whatever the room, so that calls from other threads cannot starve it."""
        queue, lock = self.queue, self.owner._lock
        while queue:
            again = queue[0].losses > 0
            free = [node for node in nodes if (node.busy == 0 if again else node.busy < node.capacity)]
            if not free:
                if self.inflight or not nodes:
                    return
                free = nodes  # a call keeps one batch in flight, however full other calls (threads) keep the nodes
            node = min(free, key=lambda node: node.busy / node.capacity)
            batch = [queue.popleft()]
            while not again and len(batch) < self.owner.batch_size and queue and not queue[0].losses:
                batch.append(queue.popleft())
            # the problems the calls brought (the ground-truth dataset's), once a batch
            payloads = [item.payload for item in batch]
            if self.owner.inline:
                brought = {item.task_id: self.owner.problems[item.task_id] for item in batch}
                ref = node.actor.verify_batch.remote(payloads, list(brought.values()))
            else:
                ref = node.actor.verify_batch.remote(payloads)
            weight = node.capacity if again else 1
            with lock:
                node.busy += weight
            self.inflight[ref] = (node, batch, weight)
            self.sent[ref] = time.monotonic()

    def ready(self) -> Iterator[Verdict]:
        while self.handed in self.done:
            yield self.done.pop(self.handed)
            self.handed += 1

    def wait(self, nodes: list[_Node]) -> None:
        """Wait (a while) for a call to come back, or a replacement actor to start, and take what came."""
        owner, ray = self.owner, self.owner._ray
        with owner._lock:
            starting = list(owner._starting)
        if not self.inflight and not starting and self.queue and not nodes:
            raise VerifierError(f"RayVerifier: expected a node to judge on, found none left (every node's actor was "
                                f"lost, and no alive node could take another); {self.read_count - self.handed} "
                                "samples of this call have no verdict")
        waiting = [*self.inflight, *starting]
        if not waiting and self.reading:  # all read was handed out (a slow sample held the window): read on
            return
        if not waiting:  # nothing out, nothing to send, verdicts missing: never to be waited for in a loop
            raise RuntimeError(f"RayVerifier: expected a verdict for samples {self.handed} to {self.read_count - 1}, "
                               "found none pending (a bug of the harness)")
        ready, _ = ray.wait(waiting, num_returns=1, timeout=WAIT_S)
        for ref in ready:
            if ref not in self.inflight:
                owner._joined(ref)
                continue
            node, batch, weight = self.inflight.pop(ref)
            del self.sent[ref]
            with owner._lock:
                node.busy -= weight
            try:
                rows = ray.get(ref)
            except ray.exceptions.RayError as exc:
                if owner._closed:  # its actor stopped by close(): no loss; closed() settles the batch
                    self.queue.extendleft(reversed(batch))
                    continue
                with owner._lock:
                    owner.lost += 1
                if not _in_code(ray, exc):
                    owner._lost(node)
                self.lose(batch, node, exc)
                continue
            for item, row in zip(batch, rows, strict=True):
                # (closed meanwhile, its node's Verifier closed by the last client's release: a sample it had not
                # run yet is this RayVerifier's closed one, as the others are)
                closed = owner._closed and row["status"] == Status.HARNESS_ERROR.value
                self.settle(item, _closed(owner, item) if closed else _verdict(row, item, batch))
        self.overdue()

    def overdue(self) -> None:
        """A batch not back within ``batch_timeout_s``: its actor is pinged (on its control threads, which no batch
        holds). One that answers is waited for again (its batch queued behind other RayVerifiers' on a shared
        actor), up to EXTENSIONS_MAX times; one that does not (a stopped process, a node that hangs) is taken as
        lost: stopped, replaced, and its batches sent again."""
        owner = self.owner
        late = time.monotonic() - owner.batch_timeout_s
        for ref in [ref for ref, sent in self.sent.items() if sent < late]:
            if ref not in self.inflight:
                continue  # went with an actor stopped above
            node = self.inflight[ref][0]
            waited = self.extended.get(ref, 0)
            if waited < EXTENSIONS_MAX and _answers(owner._ray, node):  # alive, its batch queued behind others'
                self.sent[ref], self.extended[ref] = time.monotonic(), waited + 1  # (a shared actor): wait on
                continue
            self.extended.pop(ref, None)
            node, batch, weight = self.inflight.pop(ref)
            del self.sent[ref]
            with owner._lock:
                node.busy -= weight
                owner.lost += 1
            owner._lost(node)
            self.lose(batch, node, TimeoutError(f"no answer from its node in {owner.batch_timeout_s:g} s"))

    def settle(self, item: _Item, verdict: Verdict) -> None:
        """``item``'s verdict, and its repeats'. One with no verdict on the candidate is not remembered, and each
        of its repeats is judged on its own (as the Verifier does)."""
        self.done[item.index] = verdict
        known = self.memo.get(item.key)
        if verdict.status.attempted:
            if known is item:
                self.memo[item.key] = verdict
            for repeat in item.repeats:
                self.done[repeat.index] = replace(verdict, index=repeat.index, repeat_of=item.index)
        else:
            if known is item:
                del self.memo[item.key]
            self.queue.extendleft(reversed(item.repeats))
        item.repeats = []

    def lose(self, batch: list[_Item], node: _Node, exc: BaseException) -> None:
        """A batch lost: each sample goes again, first in the queue; one lost twice is a harness_error."""
        for item in reversed(batch):
            item.losses += 1
            if item.losses >= LOSSES_MAX:
                self.settle(item, self.owner._lost_twice(item, node, exc))
            else:
                self.queue.appendleft(item)

    def cut(self) -> bool:
        """Whether the RayVerifier was closed since the call began."""
        return self.owner._closed

    def closed(self) -> Iterator[Verdict]:
        """After ``close`` (from another thread): the rest of the call, in order, each sample with the verdict that
        came back before, else a harness_error (reward None) that says the RayVerifier was closed, as the
        Verifier's samples get."""
        pending, stack = [], [*self.queue, *(item for _, batch, _ in self.inflight.values() for item in batch)]
        while stack:
            item = stack.pop()
            pending.append(item)
            stack.extend(item.repeats)
        self.let_go()
        self.queue.clear()
        for item in pending:
            self.done.setdefault(item.index, _closed(self.owner, item))
        yield from self.ready()
        for item in self.items:  # what the call had not read yet
            self.read_count += 1
            self.done[item.index] = _closed(self.owner, item)
            yield from self.ready()
        self.reading = False
        if not self.finished:
            raise RuntimeError(f"RayVerifier: expected a verdict for samples {self.handed} to {self.read_count - 1} "
                               "after close, found none (a bug of the harness)")

    def let_go(self) -> None:
        """The calls in flight are dropped: cancelled where Ray can, and counted as their node's load until they
        end there (a threaded actor finishes a batch it began), so that other calls do not pile up on it."""
        for ref, (node, _, weight) in self.inflight.items():
            with self.owner._lock:
                self.owner._abandoned[ref] = (node, weight)
            try:
                self.owner._ray.cancel(ref)
            except Exception:  # its actor already gone
                pass
        self.inflight.clear()
        self.sent.clear()
