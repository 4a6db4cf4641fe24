"""The reward adapters with ``cluster``, judged by a ``RayVerifier`` on a real Ray cluster of two nodes (both processes
of this machine, ``ray.cluster_utils.Cluster``, one CPU each), called the way each trainer calls them (the call shapes
are tests/test_trainers.py's, read in the trainers' sources at the commits named there): verl's reward loop from
threads of an event loop's executor inside Ray actors, OpenRLHF's reward file loaded and called through
``asyncio.to_thread`` inside a Ray actor, TRL's keywords on the driver (an ordinary and an ``async def`` function),
SkyRL's thread pool. The rewards are the local Verifier's on the same answers; the examples of examples/trainers/
run against the same cluster.

The slow tier: the cluster takes seconds to start (one for the module); its head takes a free port of its own, so
that another cluster of tests on this machine (tests/test_cluster.py's) is never the one reached. Without ray the
tests are skipped, saying so; the checks that need no ray run in a subprocess.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pytest_humaneval import rewards
from pytest_humaneval.engine import rewards as engine_rewards
from pytest_humaneval.engine.verifier import Verifier

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "trainers"
NODE = {"num_cpus": 1, "object_store_memory": 100 * 2**20}
TIMEOUT_S = 3.0
TASKS = ["HumanEval/0", "HumanEval/2", "HumanEval/7", "HumanEval/53"]


def needs_ray():
    """ray, else a skip that says how to install it (a broken install is an ImportError too: skipped, named)."""
    try:
        import ray
    except ImportError as exc:
        pytest.skip(f"needs_ray: pip install \"pytest-humaneval[ray]\" (the cluster tests); import ray: {exc}")
    return ray


def free_port() -> int:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        return int(free.getsockname()[1])


@pytest.fixture(scope="module")
def cluster():
    """Two nodes of one CPU each, the head (its GCS) on a free port of its own, this process connected to them; the kept
    RayVerifiers of this process closed, then the cluster shut down, with the module."""
    ray = needs_ray()
    from ray.cluster_utils import Cluster

    made = Cluster(initialize_head=True, head_node_args={**NODE, "include_dashboard": False,
                                                          "gcs_server_port": free_port()})
    made.add_node(**NODE)
    ray.init(address=made.address)
    try:
        yield made
    finally:
        engine_rewards._close_clusters()
        ray.shutdown()
        made.shutdown()


@pytest.fixture(scope="module")
def answers():
    """(task ids, answers as a model writes them: a right and a wrong one per task, fenced, with prose)."""
    with Verifier("humaneval", workers=1) as verifier:
        problems = [verifier.problems[task] for task in TASKS]
    right = [f"Here it is:\n```python\n{p.prompt}{p.canonical_solution}```" for p in problems]
    wrong = [f"```python\n{p.prompt}    return None\n```" for p in problems]
    return TASKS * 2, right + wrong


@pytest.fixture(scope="module")
def expected(answers):
    """The local Verifier's rewards on ``answers`` (the adapters without ``cluster``): what the cluster must give."""
    task_ids, texts = answers
    found = [verdict.reward for verdict in rewards.judge_answers("humaneval", task_ids, texts, timeout_s=TIMEOUT_S)]
    assert found == [1.0] * len(TASKS) + [0.0] * len(TASKS)  # the answers are what they claim to be
    return found


def kind(verifier) -> tuple[str, int]:
    """What judged: the verifier's class, and its nodes (0 for a local Verifier)."""
    return type(verifier).__name__, len(getattr(verifier, "nodes", {}))


def test_verl_reward_loop_inside_ray_actors(cluster, answers, expected):
    """verl's RewardLoopWorker: a Ray actor per node whose event loop runs compute_score (loaded by pkg://, its
    reward_kwargs merged by functools.partial, verl/trainer/ppo/reward.py) in threads of its default executor,
    with the reward router's two keywords. Each actor judges on a RayVerifier of its own over its own connection,
    kept for its process: the rewards are the local Verifier's."""
    ray = needs_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    @ray.remote(num_cpus=0)
    class RewardLoopWorker:
        def __init__(self) -> None:
            import functools
            import importlib

            raw = importlib.import_module("pytest_humaneval.rewards").compute_score
            self.reward_fn = functools.partial(lambda fn, extra, *a, **k: fn(*a, **{**k, **extra}), raw,
                                               {"cluster": True, "timeout_s": TIMEOUT_S})

        async def compute_score_batch(self, task_ids: list[str], texts: list[str]) -> dict[str, object]:
            loop = asyncio.get_running_loop()
            scores = await asyncio.gather(*[loop.run_in_executor(None, lambda t=task, s=text: self.reward_fn(
                data_source="humaneval", solution_str=s, ground_truth=t, extra_info={"num_turns": 1},
                reward_router_address=None, reward_model_tokenizer=None)) for task, text in zip(task_ids, texts, strict=True)])
            from pytest_humaneval.rewards import verifier_for

            kept = verifier_for("humaneval", cluster=True, timeout_s=TIMEOUT_S)
            again = verifier_for("humaneval", cluster=True, timeout_s=TIMEOUT_S)
            return {"scores": list(scores), "kind": (type(kept).__name__, len(kept.nodes)), "kept": kept is again,
                    "pid": os.getpid(), "actors": sorted(node.actor._actor_id.hex() for node in kept._nodes.values())}

    nodes = [node["NodeID"] for node in ray.nodes() if node["Alive"]]
    assert len(nodes) == 2
    workers = [RewardLoopWorker.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote()
               for node in nodes]
    task_ids, texts = answers
    try:
        found = ray.get([worker.compute_score_batch.remote(task_ids, texts) for worker in workers], timeout=300)
    finally:
        for worker in workers:
            ray.kill(worker)
    for each in found:
        assert each["scores"] == expected
        assert each["kind"] == ("RayVerifier", 2) and each["kept"]
    assert found[0]["pid"] != found[1]["pid"]
    assert found[0]["actors"] == found[1]["actors"]  # one judging actor per node, shared by the workers: one pool


def test_openrlhf_reward_file_inside_a_ray_actor(cluster, answers, expected):
    """OpenRLHF's rollout actor: examples/trainers/openrlhf_reward_func.py loaded as the module "reward_func"
    (openrlhf/utils/agent.py) and called per sample, [query], [prompt], [label], through asyncio.to_thread."""
    ray = needs_ray()

    @ray.remote(num_cpus=0)
    class RolloutRayActor:
        def __init__(self, path: str) -> None:
            import importlib.util

            spec = importlib.util.spec_from_file_location("reward_func", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self.reward_func = module.reward_func

        async def rewards(self, queries: list[str], prompts: list[str], labels: list[str]) -> dict[str, object]:
            found = await asyncio.gather(*[asyncio.to_thread(self.reward_func, [query], [prompt], [label])
                                           for query, prompt, label in zip(queries, prompts, labels, strict=True)])
            from pytest_humaneval.rewards import verifier_for

            kept = verifier_for("humaneval", cluster=True)
            return {"rewards": [float(each["rewards"][0]) for each in found],
                    "passed": [float(each["extra_logs"]["humaneval_passed"][0]) for each in found],
                    "kind": (type(kept).__name__, len(kept.nodes))}

    prompt = "<|im_start|>user\nWrite it<|im_end|>\n<|im_start|>assistant\n"
    task_ids, texts = answers
    queries = [prompt + text + "<|im_end|>\n<|endoftext|>" for text in texts]  # special tokens kept, as decoded
    actor = RolloutRayActor.remote(str(EXAMPLES / "openrlhf_reward_func.py"))
    try:
        found = ray.get(actor.rewards.remote(queries, [prompt] * len(queries), task_ids), timeout=300)
    finally:
        ray.kill(actor)
    assert found["rewards"] == expected and found["passed"] == expected
    assert found["kind"] == ("RayVerifier", 2)


def test_trl_on_the_driver_ordinary_and_async(cluster, answers, expected):
    """TRL's GRPOTrainer on the driver (this process, connected): an ordinary function called with its keywords,
    and an async def one awaited on a daemon thread's event loop (run_coroutine_threadsafe), as TRL runs them."""
    task_ids, texts = answers
    batch = {"prompts": ["p"] * len(texts), "completions": texts, "completion_ids": [[1]] * len(texts),
             "task_id": task_ids, "trainer_state": None, "log_extra": print, "log_metric": print}
    ordinary = rewards.trl_reward("humaneval", cluster="auto", timeout_s=TIMEOUT_S)
    asynchronous = rewards.trl_reward("humaneval", cluster="auto", timeout_s=TIMEOUT_S, asynchronous=True)
    assert not inspect.iscoroutinefunction(ordinary) and inspect.iscoroutinefunction(asynchronous)
    assert asynchronous.__name__ == ordinary.__name__ == "humaneval_humaneval"
    assert ordinary(**batch) == expected
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        assert asyncio.run_coroutine_threadsafe(asynchronous(**batch), loop).result(timeout=300) == expected
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
    assert kind(rewards.verifier_for("humaneval", cluster="auto", timeout_s=TIMEOUT_S)) == ("RayVerifier", 2)


def test_ground_truth_on_the_cluster(cluster):
    """verl's prime_code rows with cluster=true: each ground truth a problem the RayVerifier's calls bring to the
    nodes (once a batch), judged there as the local Verifier judges it; the same rewards."""
    from test_ground_truth import PAIR, PAIR_RIGHT, PAIR_WRONG, SUM, SUM_RIGHT, SUM_WRONG

    answers = [SUM_RIGHT, SUM_WRONG, PAIR_RIGHT, PAIR_WRONG] * 5
    truths = [SUM, SUM, PAIR, PAIR] * 5
    local = rewards.compute_score_batch(["codecontests"] * len(answers), answers, truths, timeout_s=TIMEOUT_S)
    assert local == [1.0, 0.0, 1.0, 0.0] * 5
    assert rewards.compute_score_batch(["codecontests"] * len(answers), answers, truths, cluster=True,
                                       timeout_s=TIMEOUT_S) == local
    found = rewards.verifier_for(rewards.GROUND_TRUTH, cluster=True, timeout_s=TIMEOUT_S)
    assert kind(found) == ("RayVerifier", 2) and len(found.problems) == 2


def test_async_trl_without_a_cluster_is_the_local_verifier(answers, expected):
    """asynchronous=True needs no cluster: the local Verifier's averify."""
    task_ids, texts = answers
    reward = rewards.trl_reward("humaneval", timeout_s=TIMEOUT_S, asynchronous=True)
    assert asyncio.run(reward(completions=texts, task_id=task_ids, prompts=None)) == expected


def test_skyrl_thread_pool(cluster, answers, expected):
    """SkyRL's environment threads: one answer a call, from a thread pool, all on the process's one RayVerifier."""
    task_ids, texts = answers

    def step(task_id: str, text: str) -> float | None:
        verdict, = rewards.judge_answers("humaneval", [task_id], [text], cluster=True, timeout_s=TIMEOUT_S)
        return verdict.reward

    with ThreadPoolExecutor(max_workers=8) as threads:
        assert list(threads.map(step, task_ids, texts)) == expected
    assert kind(rewards.verifier_for("humaneval", cluster=True, timeout_s=TIMEOUT_S)) == ("RayVerifier", 2)


@pytest.mark.parametrize("value", [1, 0, "", " ", "true", "False", "none", 3.5, ["auto"], {"address": "auto"}])
def test_a_bad_cluster_value_is_named(value):
    """Every adapter names the option, what it takes and what it found, before any Verifier is made."""
    expected = (f"rewards: cluster: expected None or False (this machine's Verifier), True (the Ray cluster this "
                f"process is connected to) or a Ray address (\"auto\", \"ray://head:10001\", \"host:6379\"), found "
                f"{value!r}")
    calls = [lambda: rewards.compute_score("humaneval", "x", TASKS[0], cluster=value),
             lambda: rewards.compute_score_batch(["humaneval"], ["x"], [TASKS[0]], cluster=value),
             lambda: rewards.trl_reward("humaneval", cluster=value),
             lambda: rewards.trl_reward("humaneval", cluster=value, asynchronous=True),
             lambda: rewards.openrlhf_reward("humaneval", cluster=value),
             lambda: rewards.judge_answers("humaneval", [TASKS[0]], ["x"], cluster=value),
             lambda: rewards.verifier_for("humaneval", cluster=value)]
    for call in calls:
        with pytest.raises(rewards.VerifierError) as raised:
            call()
        assert str(raised.value) == expected


def test_unknown_options_name_cluster_among_the_expected():
    with pytest.raises(rewards.VerifierError) as raised:
        rewards.openrlhf_reward("humaneval", clusters=True)
    assert str(raised.value) == ("rewards: clusters: unknown option (expected one of: timeout_s, memory_mb, isolation, "
                                 "workers, plus, impossible_instruction, allow_basic, compare, cluster, harness_error)")
    with pytest.raises(rewards.VerifierError, match="rewards: asynchronous: expected True or False, found 'yes'"):
        rewards.trl_reward(asynchronous="yes")


def test_without_cluster_no_ray_is_imported():
    """The base path (every adapter, cluster unset, None or False, and a bad value refused) imports no ray, nor the
    cluster's module: the base install has no ray."""
    found = run_python(f"""
        import json, sys
        from pytest_humaneval import rewards
        task, right = {TASKS[3]!r}, "def add(x, y):\\n    return x + y\\n"
        scores = [rewards.compute_score("humaneval", right, task, cluster=value) for value in (None, False)]
        scores += rewards.trl_reward("humaneval", cluster=False)(completions=[right], task_id=[task])
        try:
            rewards.judge_answers("humaneval", [task], [right], cluster=1)
        except rewards.VerifierError as exc:
            refused = str(exc).startswith("rewards: cluster: expected")
        loaded = sorted(name for name in sys.modules if name.split(".")[0] == "ray" or name.endswith(".cluster"))
        print(json.dumps([scores, refused, loaded]))
    """)
    assert json.loads(found) == [[1.0, 1.0, 1.0], True, []]


@pytest.mark.parametrize("example", sorted(path.name for path in EXAMPLES.glob("*.py")))
def test_the_python_examples_run_on_the_cluster(cluster, example):
    """Each Python example, run as written (python FILE) against the module's cluster (RAY_ADDRESS, which ray.init
    takes before any address it is given), prints the rewards of its right and wrong answers, then the RayVerifier
    that judged them, on the cluster's two nodes."""
    printed = {"trl_grpo.py": "[1.0, 0.0]\n[1.0, 0.0]",
               "openrlhf_reward_func.py": "[1.0, 0.0]",
               "skyrl_threads.py": str([1.0] * 12 + [0.0] * 12)}
    found = subprocess.run([sys.executable, str(EXAMPLES / example)], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "RAY_ADDRESS": cluster.address})
    assert found.returncode == 0, found.stderr[-3000:]
    *lines, judged = found.stdout.strip().splitlines()
    assert "\n".join(lines).endswith(printed[example]), found.stdout[-2000:]
    assert judged.startswith("RayVerifier(") and judged.endswith("nodes=2)"), judged  # the cluster judged them


def test_the_verl_example_is_well_formed(tmp_path):
    """The verl script (it needs verl, GPUs and a model) parses as bash and names our function by pkg:// with
    cluster=true among its reward_kwargs; its data step, run, writes a row per problem in verl's format."""
    script = EXAMPLES / "verl_grpo_humaneval.sh"
    checked = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr
    text = script.read_text()
    for override in ("custom_reward_function.path=pkg://pytest_humaneval.rewards",
                     "custom_reward_function.name=compute_score", "+custom_reward_function.reward_kwargs.cluster=true"):
        assert f"    {override} \\\n" in text, override
    data_step = text.split("<<'PY'\n", 1)[1].split("\nPY\n", 1)[0]
    compile(data_step, "the verl data step", "exec", dont_inherit=True)
    pandas = pytest.importorskip("pandas", reason="the verl data step writes parquet with pandas")
    pytest.importorskip("pyarrow", reason="the verl data step writes parquet")
    done = subprocess.run([sys.executable, "-c", data_step, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = pandas.read_parquet(tmp_path / "train.parquet")
    assert len(rows) == 164
    first = rows.iloc[0]
    assert (first["data_source"], first["reward_model"]["ground_truth"]) == ("humaneval", "HumanEval/0")


def run_python(code: str) -> str:
    found = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=240)
    assert found.returncode == 0, found.stderr[-3000:]
    return found.stdout.strip().splitlines()[-1]
