"""``RayVerifier`` on a real Ray cluster of two nodes, both processes of this machine (``ray.cluster_utils.Cluster``,
one CPU each): the local ``Verifier``'s verdicts, in input order; a node removed mid-stream loses no sample and
repeats none; a sample that kills its own sandbox gets its verdict; the errors name what was expected and found.

The slow tier: a cluster takes seconds to start (one for the module). Without ray the tests are skipped, saying so;
the error for a missing ray is checked in a subprocess where ``import ray`` fails.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import subprocess
import sys
import textwrap
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_humaneval import Verifier
from pytest_humaneval.engine import cluster as engine
from pytest_humaneval.engine.verdict import Status

pytestmark = pytest.mark.slow

NODE = {"num_cpus": 1, "object_store_memory": 100 * 2**20}
TIMEOUT_S = 1.0  # the timeout sample costs this, locally and on the cluster


def needs_ray():
    """ray, else a skip that says how to install it (a broken install is an ImportError too: skipped, named)."""
    try:
        import ray
    except ImportError as exc:
        pytest.skip(f"needs_ray: pip install \"pytest-humaneval[ray]\" (the cluster tests); import ray: {exc}")
    return ray


@pytest.fixture(scope="module")
def cluster():
    """Two nodes of one CPU each, this process connected to them; shut down with the module."""
    ray = needs_ray()
    from ray.cluster_utils import Cluster

    # Quick health checks: a removed node is declared dead in seconds, not the default's tens of seconds.
    made = Cluster(initialize_head=True, head_node_args={
        **NODE, "include_dashboard": False,
        "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 3}})
    made.add_node(**NODE)
    ray.init(address=made.address)
    try:
        yield made
    finally:
        ray.shutdown()
        made.shutdown()


@pytest.fixture(scope="module")
def problems():
    with Verifier("humaneval", workers=1) as verifier:
        return list(verifier.problems.values())


def samples_of(problems) -> list[tuple[str, str]]:
    """Canonical solutions and wrong samples of a few dozen problems: a wrong answer, a runtime error, a timeout,
    the exit(0) cheat (the program ends before check runs: runtime_error), no code, and repeats."""
    chosen = problems[:24]
    found = [(p.task_id, p.canonical_solution) for p in chosen]
    found += [(p.task_id, "    return None\n") for p in chosen[:6]]
    found += [(chosen[1].task_id, "    raise ValueError('no')\n"),
              (chosen[2].task_id, "    while True:\n        pass\n"),
              (chosen[3].task_id, "    exit(0)\n"),
              (chosen[4].task_id, "    import sys\n    sys.exit(0)\n"),
              (chosen[5].task_id, None)]
    found += [found[0], found[25], found[7], found[0]]  # repeats, one of a repeat
    return found


@pytest.fixture(scope="module")
def local(problems):
    """The local Verifier's verdicts on ``samples_of(problems)``: what the cluster must give."""
    with Verifier("humaneval", timeout_s=TIMEOUT_S, workers=2) as verifier:
        return verifier.verify(samples_of(problems))


def same(verdicts):
    """Verdicts as compared: every field but the wall time (a repeat carries its first's on either side), and of a
    timeout's detail what does not depend on the machine's load (``timed out after 1 s``, not whether a first
    attempt was starved of CPU by other programs and judged again)."""
    return [replace(verdict, duration_ms=None,
                    detail=verdict.detail.split(";")[0] if verdict.status is Status.TIMEOUT else verdict.detail)
            for verdict in verdicts]


@pytest.fixture
def verifier(cluster):
    with engine.RayVerifier("humaneval", timeout_s=TIMEOUT_S, batch_size=4) as made:
        yield made


def test_verdicts_equal_the_local_verifiers(verifier, problems, local):
    statuses = {verdict.status for verdict in local}
    assert statuses == {Status.PASSED, Status.ASSERTION_FAILED, Status.RUNTIME_ERROR, Status.TIMEOUT,
                        Status.NOT_RUN}  # the samples cover what they claim to
    assert len(verifier.nodes) == 2
    got = verifier.verify(samples_of(problems))
    assert same(got) == same(local)
    assert [verdict.index for verdict in got] == list(range(len(local)))
    assert [verdict.repeat_of for verdict in got[-4:]] == [0, 25, 7, 0]
    assert got[-1].duration_ms == got[0].duration_ms  # a repeat is the first's execution, not another


def test_the_exit_cheat_fails(verifier, problems):
    chosen = problems[3]
    got = verifier.verify([(chosen.task_id, "    exit(0)\n"), {"task_id": chosen.task_id,
                                                                "solution": "import os\nos._exit(0)\n"}])
    assert [verdict.status for verdict in got] == [Status.RUNTIME_ERROR, Status.RUNTIME_ERROR]
    assert [verdict.reward for verdict in got] == [0.0, 0.0]


def test_stream_keeps_input_order_and_repeats(verifier, problems, local):
    """A lazy input, read as the verdicts are handed out; mappings and pairs alike."""
    samples = samples_of(problems)
    lazy = ({"task_id": task_id, "completion": code} if index % 2 else (task_id, code)
            for index, (task_id, code) in enumerate(samples))
    assert same(verifier.stream(lazy)) == same(local)


def test_without_dedupe_every_sample_runs(cluster, problems):
    """(And the address of the cluster this process is connected to is taken as it.)"""
    task = problems[0]
    with engine.RayVerifier("humaneval", address=cluster.address, dedupe=False, batch_size=1) as verifier:
        got = verifier.verify([(task.task_id, task.canonical_solution)] * 3)
    assert [(verdict.index, verdict.repeat_of, verdict.status) for verdict in got] == \
        [(index, None, Status.PASSED) for index in range(3)]


def test_calls_from_several_threads_get_their_own_verdicts(verifier, problems, local):
    samples = samples_of(problems)
    found: dict[int, object] = {}

    def call(number: int) -> None:
        try:
            found[number] = verifier.verify(samples[number:] + samples[:number])
        except Exception as exc:  # said by the assertion below
            found[number] = exc

    threads = [threading.Thread(target=call, args=(number,)) for number in (0, 5, 11)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(found) == [0, 5, 11]
    for number, verdicts in found.items():
        assert isinstance(verdicts, list), verdicts
        assert [(v.task_id, v.status) for v in verdicts] == [(v.task_id, v.status) for v in local[number:] + local[:number]]


def test_close_during_a_call_gives_its_samples_a_harness_error(cluster, problems):
    """close() from another thread while a call runs: the call returns, in order, a verdict for every sample (one
    that came back before, else a harness_error, reward None, that says the RayVerifier was closed), as the
    Verifier's calls do; no sample is counted as lost with its node."""
    task = problems[0]
    slow = [(task.task_id, f"    import time\n    time.sleep(0.4)  # {index}\n    return False\n") for index in range(40)]
    made = engine.RayVerifier("humaneval", timeout_s=TIMEOUT_S, batch_size=2)
    got: list = []
    caller = threading.Thread(target=lambda: got.extend(made.verify(slow)))
    caller.start()
    threading.Timer(2.0, made.close).start()
    caller.join(120)
    assert not caller.is_alive(), "the call did not return after close()"
    assert [verdict.index for verdict in got] == list(range(40))
    closed = [verdict for verdict in got if verdict.status is Status.HARNESS_ERROR]
    assert closed, "close() came after every verdict: the call was not cut"
    assert all(verdict.detail == engine.CLOSED and verdict.reward is None for verdict in closed), closed[:3]
    assert all(verdict.status is Status.ASSERTION_FAILED for verdict in got if verdict not in closed)
    assert made.lost == 0


def test_a_dataset_file_of_the_driver_is_put_once_for_every_node(cluster, tmp_path):
    """A file only the driver has: each node judges on its bytes, as the local Verifier does on the file."""
    bundled = Path(engine.__file__).parents[1] / "fixtures" / "HumanEval.jsonl.gz"
    rows = gzip.decompress(bundled.read_bytes()).decode().splitlines()[:3]
    path = tmp_path / "three.jsonl"
    path.write_text("\n".join(rows) + "\n")
    samples = [(json.loads(row)["task_id"], json.loads(row)["canonical_solution"]) for row in rows]
    samples.append((samples[0][0], "    return None\n"))
    with Verifier(path, workers=1) as alone:
        expected = alone.verify(samples)
    with engine.RayVerifier(path, batch_size=1) as verifier:
        got = verifier.verify(samples)
        assert verifier.dataset == alone.dataset
    assert same(got) == same(expected)
    assert [verdict.status for verdict in got] == [Status.PASSED] * 3 + [Status.ASSERTION_FAILED]


def test_averify_and_astream_from_asyncio_run(verifier, problems, local):
    samples = samples_of(problems)

    async def both():
        listed = await verifier.averify(samples)
        streamed = [verdict async for verdict in verifier.astream(iter(samples))]
        return listed, streamed

    listed, streamed = asyncio.run(both())
    assert same(listed) == same(local) and same(streamed) == same(local)


def test_a_sample_that_kills_its_sandbox_gets_its_verdict(verifier, problems):
    """Samples that try to kill their sandbox (its process, its parent, every process they may signal: all of them
    its own sandbox's, never one of Ray's) get their verdict, the local Verifier's, and the samples around them are
    judged as ever: nothing is lost, no actor dies."""
    killers = ["    import os, signal\n    os.kill(os.getppid(), signal.SIGKILL)\n", "    import os\n    os.kill(-1, 9)\n",
               "    import os\n    os.killpg(0, 9)\n", "    import os\n    os.kill(os.getpid(), 9)\n"]
    samples = [(p.task_id, p.canonical_solution) for p in problems[:5]]
    for index, killer in enumerate(killers):
        samples.insert(1 + 2 * index, (problems[5].task_id, killer))
    with Verifier("humaneval", timeout_s=TIMEOUT_S, workers=1) as alone:
        expected = alone.verify(samples)
    lost = verifier.lost
    got = verifier.verify(samples)
    assert same(got) == same(expected)
    assert [verdict.status for verdict in got] == [Status.PASSED, Status.RUNTIME_ERROR] * 4 + [Status.PASSED]
    assert verifier.lost == lost


def test_a_node_removed_mid_stream_loses_nothing_and_repeats_nothing(cluster, problems):
    """The worker node is removed while each node holds batches in flight: its samples are judged on the survivor,
    every verdict once, in order, equal to the local Verifier's (none a harness_error)."""
    worker = next(iter(cluster.worker_nodes))
    slow = "    import time\n    time.sleep(0.25)\n"  # a quarter of a second a sample: the batches stay in flight
    samples = [(p.task_id, slow + p.canonical_solution.lstrip("\n")) for p in problems[:14]]
    samples += [(p.task_id, slow + "    return None\n") for p in problems[:4]]
    with Verifier("humaneval", workers=2) as alone:
        expected = alone.verify(samples)
    statuses = {verdict.status for verdict in expected}
    assert Status.PASSED in statuses and Status.ASSERTION_FAILED in statuses and Status.HARNESS_ERROR not in statuses
    got = []
    try:
        with engine.RayVerifier("humaneval", batch_size=3) as verifier:
            assert len(verifier.nodes) == 2
            for verdict in verifier.stream(iter(samples)):
                got.append(verdict)
                if len(got) == 1:
                    cluster.remove_node(worker)
            lost = verifier.lost
    finally:
        cluster.add_node(**NODE)  # the module's other tests have two nodes again
    assert lost >= 1  # the removal did take batches with it: what this test is about
    assert [verdict.index for verdict in got] == list(range(len(samples)))
    assert same(got) == same(expected)


def test_a_sample_lost_twice_is_a_harness_error(cluster, problems):
    """A sample whose batch is lost twice (here: it kills the actor judging it, each time) is a harness_error, reward
    None, never a 0 or a 1; the samples of its first batch are judged elsewhere, each once."""
    ray = needs_ray()
    samples = [(p.task_id, p.canonical_solution) for p in problems[:4]]

    class Fragile(engine.NodeJudge):
        def verify_batch(self, batch):
            if any("SIGKILL-ACTOR" in (sample.get("completion") or "") for sample in batch):
                import os
                os._exit(1)  # the actor's process dies with the batch: a worker crash, as Ray sees it
            return super().verify_batch(batch)

    samples.insert(2, (problems[9].task_id, "    return 'SIGKILL-ACTOR'\n"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "NodeJudge", Fragile)
        with engine.RayVerifier("humaneval", batch_size=5) as verifier:
            got = verifier.verify(samples)
    assert [verdict.index for verdict in got] == list(range(5))
    assert [verdict.status for verdict in got] == [Status.PASSED] * 2 + [Status.HARNESS_ERROR] + [Status.PASSED] * 2
    assert got[2].reward is None and "lost 2 times" in got[2].detail, got[2].detail
    assert ray.is_initialized()


def test_when_no_node_is_left_the_stream_says_so(cluster, problems):
    """Every actor dies with its batch, and each node takes only so many replacements: one VerifierError, raised
    from the stream, once no node can take the samples left (the ones judged before it keep their verdicts)."""
    ray = needs_ray()

    class Doomed(engine.NodeJudge):
        def verify_batch(self, batch):
            import os
            os._exit(1)

    samples = [(p.task_id, p.canonical_solution) for p in problems[:16]]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "NodeJudge", Doomed)
        with engine.RayVerifier("humaneval", batch_size=4) as verifier:
            got = []
            with pytest.raises(engine.VerifierError) as raised:
                got.extend(verifier.stream(samples))
    assert str(raised.value).startswith("RayVerifier: expected a node to judge on, found none left"), raised.value
    assert all(verdict.status is Status.HARNESS_ERROR for verdict in got)
    assert ray.is_initialized() and len([node for node in ray.nodes() if node["Alive"]]) == 2


def test_a_node_whose_sandbox_cannot_start_is_named(cluster):
    """The local Verifier's own error, with the node's address."""
    ray = needs_ray()

    class Unstartable(engine.NodeJudge):
        def __init__(self, *args):
            sys.executable = "/nonexistent/python3"  # this actor's process only: its supervisor cannot start
            super().__init__(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "NodeJudge", Unstartable)
        with pytest.raises(engine.VerifierError) as raised:
            engine.RayVerifier("humaneval")
    address = ray.util.get_node_ip_address()
    assert str(raised.value).startswith(f"RayVerifier: node {address}: Verifier: params.isolation: could not start "
                                        "the sandbox supervisor (/nonexistent/python3)"), raised.value


def test_no_cluster_at_the_address_is_named(cluster):
    """A free port of this machine: one error at once, not minutes of ray.init's retries."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with pytest.raises(engine.VerifierError) as raised:  # connected already: the address must be this cluster's
        engine.RayVerifier("humaneval", address=f"127.0.0.1:{port}")
    assert "expected the cluster this process is connected to" in str(raised.value)
    found = run(f"""
        from pytest_humaneval.cluster import RayVerifier
        RayVerifier("humaneval", address="127.0.0.1:{port}")
    """)
    assert found == (f"RayVerifier: address: expected a Ray cluster at '127.0.0.1:{port}', found none (nothing "
                     f"answers at 127.0.0.1:{port}: Connection refused); start one with `ray start --head`, or pass "
                     "the address `ray start` printed")


def test_without_ray_the_error_says_how_to_install_it():
    """Importing the module imports no ray; making a RayVerifier says what to install."""
    found = run("""
        import sys
        sys.modules["ray"] = None  # import ray fails, as where it is not installed
        from pytest_humaneval.cluster import RayVerifier
        assert "ray" not in [name.split(".")[0] for name in sys.modules if sys.modules[name] is not None]
        RayVerifier("humaneval")
    """)
    assert found.startswith('RayVerifier: expected the ray package, found none: pip install '
                            '"pytest-humaneval[ray]"'), found


@pytest.mark.parametrize(("keywords", "expected"), [
    ({"timeout_s": 0}, "RayVerifier: params.timeout_s: expected a number > 0 and <= 3600, found 0"),
    ({"isolation": "nope"}, "RayVerifier: params.isolation: expected auto | strict | basic, found 'nope'"),
    ({"batch_size": 0}, "RayVerifier: batch_size: expected an integer >= 1, found 0"),
    ({"max_in_flight": True}, "RayVerifier: max_in_flight: expected an integer >= 1, found True"),
    ({"batch_timeout_s": 0}, "RayVerifier: batch_timeout_s: expected a number of seconds > 0, found 0"),
    ({"start_timeout_s": "5"}, "RayVerifier: start_timeout_s: expected a number of seconds > 0, found '5'"),
])
def test_bad_keywords_are_named_before_the_cluster_is_reached(keywords, expected):
    with pytest.raises(engine.VerifierError) as raised:
        engine.RayVerifier("humaneval", address="127.0.0.1:1", **keywords)
    assert str(raised.value) == expected


def test_importing_the_face_imports_no_ray():
    found = subprocess.run([sys.executable, "-c", "import sys, pytest_humaneval.cluster; print('ray' in sys.modules)"],
                           capture_output=True, text=True, timeout=60)
    assert found.stdout.strip() == "False", found.stderr


def run(code: str) -> str:
    """The VerifierError ``code`` raises in a fresh interpreter (its message), bounded in time."""
    wrapped = "from pytest_humaneval.cluster import VerifierError\ntry:\n" + textwrap.indent(
        textwrap.dedent(code), "    ") + "\nexcept VerifierError as exc:\n    print(exc)\nelse:\n    print('no error')\n"
    done = subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"})
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]



def test_verifiers_that_judge_alike_share_each_nodes_actor(cluster, problems):
    """Two RayVerifiers of one job with the same dataset and options (verl's reward-loop workers, say) share each
    node's actor, so a node runs one pool of sandboxes, not one per driver; the first to close leaves the other
    judging, with nothing lost; the last one's close stops the actors. Other options: other actors."""
    ray = needs_ray()
    task = problems[0]
    first = engine.RayVerifier("humaneval", timeout_s=TIMEOUT_S)
    second = engine.RayVerifier("humaneval", timeout_s=TIMEOUT_S)
    other = engine.RayVerifier("humaneval", timeout_s=2.0)
    try:
        def actors(made):
            return {node.node_id: node.actor._actor_id for node in made._nodes.values()}

        assert actors(first) == actors(second) and len(actors(first)) == 2
        assert not set(actors(other).values()) & set(actors(first).values())
        first.close()
        got = second.verify([(task.task_id, task.canonical_solution), (task.task_id, "    return None\n")])
        assert [verdict.status for verdict in got] == [Status.PASSED, Status.ASSERTION_FAILED], got
        assert second.lost == 0
        names = set(ray.util.list_named_actors())
        assert {f"{engine.NAMESPACE_PREFIX}/{second._kind}/{node_id}" for node_id in actors(second)} <= names
        second.close()
        for node_id in actors(second):
            with pytest.raises(ValueError):  # no actor by that name any more
                ray.get_actor(f"{engine.NAMESPACE_PREFIX}/{second._kind}/{node_id}")
    finally:
        for made in (first, second, other):
            made.close()


def test_a_node_that_does_not_answer_costs_its_batch_a_resend(cluster, problems):
    """An actor that stops answering (its process stopped by a signal, as a candidate running as the Ray worker's
    user could stop it) holds no call forever: a batch not back within batch_timeout_s gets its actor pinged, and
    one that does not answer is taken as lost (stopped and replaced, the batch sent again); the sample that stops
    it, alone the second time, is a harness_error (reward None); the others pass."""

    class Stopping(engine.NodeJudge):
        def verify_batch(self, batch):
            if any("STOP-ACTOR" in (sample.get("completion") or "") for sample in batch):
                import os
                import signal
                os.kill(os.getpid(), signal.SIGSTOP)  # this actor's own process; ended by the driver's kill
            return super().verify_batch(batch)

    samples = [(p.task_id, p.canonical_solution) for p in problems[:4]]
    samples.insert(1, (problems[9].task_id, "    return 'STOP-ACTOR'\n"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "NodeJudge", Stopping)
        patch.setattr(engine, "PING_S", 3.0)
        with engine.RayVerifier("humaneval", batch_size=5, batch_timeout_s=4) as verifier:
            got = verifier.verify(samples)
            lost = verifier.lost
    assert [verdict.status for verdict in got] == [Status.PASSED, Status.HARNESS_ERROR] + [Status.PASSED] * 3
    assert got[1].reward is None and "no answer from its node in 4 s" in got[1].detail, got[1].detail
    assert lost == 2


def test_a_batch_queued_behind_others_on_an_actor_that_answers_is_waited_for(cluster, problems):
    """Past batch_timeout_s, an actor that answers its ping (its batches queue behind others' on a shared actor, or
    run long) is not taken as lost: the batch is waited for (up to EXTENSIONS_MAX times more), and its verdicts
    come back, none lost."""
    samples = [{"task_id": p.task_id, "solution": "import time\ntime.sleep(1.5)  # once, as it loads\n" + p.prompt +
                p.canonical_solution} for p in problems[:4]]
    with engine.RayVerifier("humaneval", batch_size=1, max_in_flight=1, batch_timeout_s=1, timeout_s=10) as verifier:
        got = verifier.verify(samples)
        lost = verifier.lost
    assert [verdict.status for verdict in got] == [Status.PASSED] * 4
    assert lost == 0


def test_a_node_that_joins_is_picked_up(cluster, problems):
    """A node added while a stream runs judges from the next look at the cluster on (every NODE_POLL_S)."""
    slow = "    import time\n    time.sleep(0.2)\n"
    samples = [(p.task_id, slow + p.canonical_solution.lstrip("\n")) for p in problems[:30]]
    added = None
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(engine, "NODE_POLL_S", 0.5)
            with engine.RayVerifier("humaneval", batch_size=2) as verifier:
                assert len(verifier.nodes) == 2
                got = []
                for verdict in verifier.stream(iter(samples)):
                    got.append(verdict)
                    if len(got) == 1:
                        added = cluster.add_node(**NODE)
                nodes = len(verifier.nodes)
    finally:
        if added is not None:
            cluster.remove_node(added)
    assert nodes == 3
    assert [verdict.status for verdict in got] == [Status.PASSED] * 30


def test_a_node_of_another_install_is_named(cluster):
    """A driver and a node with different pytest-humaneval sources would judge differently: refused, named."""
    ray = needs_ray()

    class Older(engine.NodeJudge):
        def __init__(self, *args):
            super().__init__(*args)
            self.build = "0.0.9 (sources 000000000000)"

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "NodeJudge", Older)
        with pytest.raises(engine.VerifierError) as raised:
            engine.RayVerifier("humaneval")
    address = ray.util.get_node_ip_address()
    assert str(raised.value) == (f"RayVerifier: node {address}: expected pytest-humaneval {engine.build()}, as on "
                                 "the driver, found 0.0.9 (sources 000000000000): install the same version on every "
                                 "node (on one machine: its sources were changed since the driver read them)")


def test_a_dropped_stream_still_counts_on_its_node_until_its_batches_end(cluster, problems):
    """A stream dropped midway: its batches already running on a node (a threaded actor finishes what it began) are
    that node's load until they end, so the next call does not pile onto it; then they are not."""
    slow = "    import time\n    time.sleep(0.5)\n"
    samples = [(p.task_id, slow + p.canonical_solution.lstrip("\n")) for p in problems[:24]]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "NODE_POLL_S", 0.0)
        with engine.RayVerifier("humaneval", batch_size=4) as verifier:
            stream = verifier.stream(iter(samples))
            next(stream)
            stream.close()
            assert sum(node.busy for node in verifier._nodes.values()) > 0
            task = problems[0]
            got = verifier.verify([(task.task_id, task.canonical_solution)] * 2)  # polls, waits, ends
            assert [verdict.status for verdict in got] == [Status.PASSED] * 2
            import time
            deadline = time.monotonic() + 60
            while verifier._abandoned and time.monotonic() < deadline:
                verifier._poll()
                time.sleep(0.2)
            assert sum(node.busy for node in verifier._nodes.values()) == 0


def test_a_progress_ray_cannot_send_is_named():
    needs_ray()  # (the check is made once ray is imported)
    class Unsendable:
        def __init__(self):
            self.lock = threading.Lock()

        def __call__(self, text, final=False):
            pass

    with pytest.raises(engine.VerifierError) as raised:
        engine.RayVerifier("humaneval", address="127.0.0.1:1", progress=Unsendable())
    assert str(raised.value).startswith("RayVerifier: progress: expected a function Ray can send to the nodes (one "
                                        "that pickles), found <"), raised.value


def test_an_address_that_ray_address_would_override_is_named():
    """ray.init connects to RAY_ADDRESS whatever address it is given: two different ones are one named error."""
    needs_ray()
    found = run("""
        import os
        os.environ["RAY_ADDRESS"] = "127.0.0.1:1"
        from pytest_humaneval.cluster import RayVerifier
        RayVerifier("humaneval", address="127.0.0.1:2")
    """)
    assert found == ("RayVerifier: address: expected one cluster, found address='127.0.0.1:2' and "
                     "RAY_ADDRESS='127.0.0.1:1' (Ray would connect to RAY_ADDRESS's): unset one of them")


def test_a_slow_sample_holding_the_window_does_not_stop_the_stream(cluster, problems):
    """A slow sample first: the samples after it fill the window read ahead and come back before it; once it does,
    all that was read is handed out, and the call reads on (it raised "found none pending" here before)."""
    task = problems[0]
    samples = [(task.task_id, "    import time\n    time.sleep(1.5)\n    return False\n")]
    samples += [(p.task_id, p.canonical_solution) for p in problems[1:13]]
    with engine.RayVerifier("humaneval", batch_size=1, max_in_flight=1, dedupe=False) as verifier:
        got = verifier.verify(samples)
    assert [verdict.status for verdict in got] == [Status.ASSERTION_FAILED] + [Status.PASSED] * 12


def test_a_shared_actor_stopped_as_another_verifier_finds_it_is_made_anew(cluster, problems, monkeypatch):
    """The last RayVerifier using a node's shared actor closes (stopping it) just after another one of the job found
    the actor by its name and before it asked it anything (trainer workers starting as others end: CI met it): the
    newcomer's question dies with the actor, and it starts the actor anew rather than failing."""
    task = problems[0]
    first = engine.RayVerifier("humaneval", timeout_s=TIMEOUT_S)
    found = engine.RayVerifier._start

    def found_then_stopped(self, *args):
        node = found(self, *args)
        first.close()  # its only client: each node's actor is stopped, after the newcomer got its handle
        return node

    monkeypatch.setattr(engine.RayVerifier, "_start", found_then_stopped)
    try:
        second = engine.RayVerifier("humaneval", timeout_s=TIMEOUT_S)
    finally:
        monkeypatch.undo()
        first.close()
    with second:
        assert len(second._nodes) == 2
        got = second.verify([(task.task_id, task.canonical_solution), (task.task_id, "    return None\n")])
        assert [verdict.status for verdict in got] == [Status.PASSED, Status.ASSERTION_FAILED], got


def test_an_actor_stopped_at_each_start_is_named_after_the_last_try(cluster, monkeypatch):
    """A node's actor found stopping at every one of its starts: one error naming the node and the tries, not a loop
    and not a bare word."""
    monkeypatch.setattr(engine.RayVerifier, "_started", lambda self, node, ref, timeout=None: engine.CLOSING)
    monkeypatch.setattr(engine.RayVerifier, "_again", lambda self, node: node)
    with pytest.raises(engine.VerifierError, match=r"^RayVerifier: node \S+: expected its judging actor to start, "
                                                   r"found it stopped as it started, 6 times \(the job's other"):
        engine.RayVerifier("humaneval", timeout_s=TIMEOUT_S)


def test_a_shared_actors_owner_that_ends_costs_the_others_nothing(cluster, problems):
    """Two processes of the job judge alike (two Ray actors, as verl's reward-loop workers): they share each node's
    actor, which lives with the process that started it. That process ends while the other streams: the other's
    batches on the shared actors are lost, sent again, and a new actor judges them; every verdict once, in order,
    none a harness_error."""
    ray = needs_ray()
    slow = "    import time\n    time.sleep(0.2)\n"
    samples = [(p.task_id, slow + p.canonical_solution.lstrip("\n")) for p in problems[:16]]

    @ray.remote(num_cpus=0)
    class Trainer:
        def start(self):
            from pytest_humaneval.engine import cluster as engine_here

            self.verifier = engine_here.RayVerifier("humaneval", batch_size=2)
            return sorted(node.actor._actor_id.hex() for node in self.verifier._nodes.values())

        def stream(self, samples, owner=None):
            got = []
            for verdict in self.verifier.stream(samples):
                got.append((verdict.index, verdict.status.value))
                if owner is not None and len(got) == 2:
                    ray.kill(owner)  # the process that started the shared actors ends
            return got, self.verifier.lost

    owner, other = Trainer.remote(), Trainer.remote()
    try:
        first = ray.get(owner.start.remote(), timeout=300)
        assert ray.get(other.start.remote(), timeout=300) == first  # the same actors: started by the owner
        got, lost = ray.get(other.stream.remote(samples, owner), timeout=300)
    finally:
        ray.kill(other)
        ray.kill(owner)
    assert [index for index, _ in got] == list(range(16))
    assert {status for _, status in got} == {"passed"}
    assert lost >= 1  # the owner's end did take the shared actors (and their batches) with it


def test_standard_input_and_functional_problems_on_the_cluster(cluster):
    """A rows file of standard-input and functional problems (the bundled corpus): the cluster's verdicts are the
    local Verifier's."""
    fixtures = Path(engine.__file__).parents[1] / "fixtures"
    programs = json.loads((fixtures / "io_corpus_programs.json").read_text())
    samples = [(task, pair[which]) for task, pair in programs.items() for which in ("reference", "wrong")]
    with Verifier(fixtures / "io_corpus.jsonl", timeout_s=6, workers=1) as alone:
        expected = alone.verify(samples)
    with engine.RayVerifier(fixtures / "io_corpus.jsonl", timeout_s=6, batch_size=3) as verifier:
        got = verifier.verify(samples)
    assert same(got) == same(expected)
    assert [verdict.status for verdict in got] == [Status.PASSED, Status.ASSERTION_FAILED] * len(programs)
