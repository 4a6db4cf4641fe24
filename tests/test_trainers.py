"""The reward functions where RL engineers plug them in: loaded and called as each trainer's own source does
(verl's loaders and managers, TRL's GRPOTrainer, OpenRLHF's remote reward file; their code read at the commits
named below, no trainer installed), and the answers each trainer's tokenizer leaves.

- verl b178a3cd: verl/utils/import_utils.py (load_module, ``pkg://``), verl/trainer/ppo/reward.py
  (get_custom_reward_fn: reward_kwargs merged by functools.partial), reward_manager/{naive,batch,prime}.py,
  experimental/reward_loop/reward_manager/naive.py (a reward router's two keywords, a thread of the loop's pool).
- OpenRLHF 3c3be623: openrlhf/utils/agent.py (the file loaded as module "reward_func", called from
  asyncio.to_thread with [query], [prompt], [label]; the query decoded with skip_special_tokens=False).
- TRL f2cd5771: trl/trainer/grpo_trainer.py (_calculate_rewards: prompts, completions, completion_ids,
  trainer_state, log_extra, log_metric and the dataset's columns as keywords).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from test_verifier import PROBLEMS

from pytest_humaneval import Verifier, rewards

REWARDS_FILE = Path(rewards.__file__)
TASK = "HumanEval/0"
BODY = PROBLEMS[TASK].canonical_solution
RIGHT_PROGRAM = PROBLEMS[TASK].prompt + BODY
RIGHT = f"```python\n{RIGHT_PROGRAM}```"
WRONG = "```python\ndef has_close_elements(numbers, threshold):\n    return True\n```"


def run_python(code: str) -> str:
    found = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                           timeout=240)
    assert found.returncode == 0, found.stderr[-3000:]
    return found.stdout.strip().splitlines()[-1]


# verl's loaders, as written in its source (the current one, and the one before pkg:// came)
VERL_LOADERS = textwrap.dedent("""
    import importlib, importlib.util, os, sys
    def load_module(module_path, module_name=None):  # verl/utils/import_utils.py
        if module_path.startswith("pkg://"):
            return importlib.import_module(module_path[len("pkg://"):].replace("/", "."))
        if module_path.startswith("file://"):
            module_path = module_path[len("file://"):]
        spec_name = module_name or f"custom_module_{hash(os.path.abspath(module_path))}"
        spec = importlib.util.spec_from_file_location(spec_name, module_path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    def load_older(file_path):  # verl/trainer/ppo/reward.py before #4615: one cached "custom_module"
        module = sys.modules.get("custom_module", None)
        if module is None:
            spec = importlib.util.spec_from_file_location("custom_module", file_path)
            module = importlib.util.module_from_spec(spec)
            sys.modules["custom_module"] = module
            spec.loader.exec_module(module)
        return module
""")


@pytest.mark.parametrize("how", ["path", "file://", "pkg://", "older loader"])
def test_verl_loads_the_rewards_file(how):
    """The path the docs give (the module's file) and pkg:// load, and give the package's own functions."""
    path = {"path": str(REWARDS_FILE), "file://": f"file://{REWARDS_FILE}",
            "pkg://": "pkg://pytest_humaneval.rewards", "older loader": str(REWARDS_FILE)}[how]
    load = "load_older" if how == "older loader" else "load_module"
    found = run_python(VERL_LOADERS + f"""
import functools, json, pytest_humaneval.rewards as package
module = {load}({path!r})
fn = functools.partial(lambda raw, extra, *a, **k: raw(*a, **{{**k, **extra}}), module.compute_score, {{}})
scores = [fn(data_source="humaneval", solution_str=s, ground_truth={TASK!r}, extra_info={{}}) for s in
          ({RIGHT!r}, {WRONG!r})]
print(json.dumps([scores, module.compute_score is package.compute_score]))
""")
    assert json.loads(found) == [[1.0, 0.0], True]


def test_verl_prime_manager_sends_the_function_to_its_process_pool():
    """PRIME pickles the loaded function into a ProcessPoolExecutor and calls it positionally; an exception there
    is silently a 0.0, so the function must pickle (by reference, as the package's own) and score right. Each
    pool process keeps one sandbox, not one per CPU, and none is left when the pool is gone."""
    found = run_python(VERL_LOADERS + f"""
import asyncio, functools, json, os, time
from concurrent.futures import ProcessPoolExecutor
module = load_module({str(REWARDS_FILE)!r})

def supervisors():  # this test's sandboxes: supervisors whose parent is one of our pool's processes
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{{pid}}/cmdline", "rb").read()
            ppid = int(open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if b"_supervisor.py" in cmd and ppid in workers:
            found.append(pid)
    return found

async def main():
    loop = asyncio.get_running_loop()
    with ProcessPoolExecutor(max_workers=2) as executor:
        calls = [loop.run_in_executor(executor, functools.partial(module.compute_score, "humaneval", answer,
                                                                  {TASK!r}, None))
                 for answer in [{RIGHT!r}, {WRONG!r}] * 3]
        scores = await asyncio.gather(*calls)
        global workers
        workers = set(executor._processes)
        during = len(supervisors())
    for _ in range(100):  # the pool's processes exit (os._exit: no finalizer runs); their sandboxes go with them
        if not supervisors():
            break
        time.sleep(0.1)
    return scores, during, len(supervisors())

print(json.dumps(asyncio.run(main())))
""")
    scores, during, after = json.loads(found)
    assert scores == [1.0, 0.0] * 3
    assert 1 <= during <= 2  # one sandbox in each pool process that judged
    assert after == 0


def test_verl_reward_loop_with_a_router_and_batch_kwargs():
    """verl's reward loop adds reward_router_address and reward_model_tokenizer (and calls from its loop's thread
    pool); the batch manager adds its reward_kwargs: taken, the router's ignored, ours used."""
    scores: list[float] = []

    def call():
        scores.append(rewards.compute_score(data_source="humaneval", solution_str=RIGHT, ground_truth=TASK,
                                            extra_info={"num_turns": 1}, reward_router_address="127.0.0.1:9",
                                            reward_model_tokenizer=object()))
    thread = threading.Thread(target=call)
    thread.start()
    thread.join(120)
    assert scores == [1.0]
    assert rewards.compute_score_batch(data_sources=["humaneval"] * 2, solution_strs=[RIGHT, WRONG],
                                       ground_truths=[TASK, TASK], extra_infos=[{}, {}], timeout_s=3.0,
                                       reward_router_address=None) == [1.0, 0.0]
    with pytest.raises(rewards.VerifierError, match="rewards: timeout: unknown option"):
        rewards.compute_score("humaneval", RIGHT, TASK, timeout=3)  # a typo of ours is still an error


def test_mismatched_batches_are_named():
    with pytest.raises(rewards.VerifierError, match="expected one of the data sources per one of the solution "
                                                    "strings, found 1 data sources for 2 solution strings"):
        rewards.compute_score_batch(["humaneval"], [RIGHT, WRONG], [TASK, TASK], harness_error="raise")
    with pytest.raises(rewards.VerifierError, match="found 3 extra infos for 2"):
        rewards.compute_score_batch(["humaneval"] * 2, [RIGHT, WRONG], [TASK, TASK], [None] * 3)
    with pytest.raises(rewards.VerifierError, match="found 1 labels for 2 queries"):
        rewards.openrlhf_reward()(["a", "b"], ["", ""], [TASK])
    with pytest.raises(rewards.VerifierError, match="sample 0: answer: expected the model's text"):
        rewards.compute_score("humaneval", b"def f(): pass", TASK)


# What tokenizers leave in decoded text with special tokens kept (OpenRLHF): each family's end of turn, padding
# after it, the assistant header of a prompt not cut off.
TOKENIZER_TAILS = {
    "qwen": ("", "<|im_end|>\n<|endoftext|><|endoftext|>"),
    "llama3": ("", "<|eot_id|><|end_of_text|>"),
    "deepseek": ("", "<\uff5cend\u2581of\u2581sentence\uff5c>"),
    "gemma": ("", "<end_of_turn>\n<eos><pad><pad>"),
    "phi": ("", "<|end|><|endoftext|>"),
    "mistral": ("", "</s></s>"),
    "qwen header": ("<|im_start|>assistant\n", "<|im_end|>"),
    "llama3 header": ("<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>"),
}


@pytest.mark.parametrize("family", sorted(TOKENIZER_TAILS))
def test_openrlhf_answers_with_special_tokens(family):
    """An unfenced right answer followed by the end-of-sequence text OpenRLHF keeps scores 1.0 (it was a
    SyntaxError, 0.0), from the thread OpenRLHF calls it in; a wrong one 0.0."""
    head, tail = TOKENIZER_TAILS[family]
    prompt = "<|im_start|>user\nWrite it<|im_end|>\n"
    reward_func = rewards.openrlhf_reward("humaneval")
    out: list[dict] = []
    thread = threading.Thread(target=lambda: out.append(reward_func(
        [prompt + head + RIGHT_PROGRAM + tail, prompt + head + WRONG + tail], [prompt, prompt], [TASK, TASK],
        step=3)))
    thread.start()
    thread.join(120)
    assert [float(x) for x in out[0]["rewards"]] == [1.0, 0.0]


def test_end_tokens_inside_code_are_kept():
    """"</s>" in a string of the program is code, not an end of turn (only a trailing one is padding)."""
    program = PROBLEMS[TASK].prompt + "    tag = '</s>'\n" + BODY
    assert rewards.answer_text(program + "</s>") == program
    assert rewards.compute_score("humaneval", program + "</s>\n</s>", TASK) == 1.0


def test_trl_conversations_with_parts_tools_and_none():
    """TRL's completions: content as parts, a tool message after the answer, a None content (a tool call):
    rewards, never an exception that stops training."""
    reward = rewards.trl_reward("humaneval")
    completions = [
        [{"role": "assistant", "content": [{"type": "text", "text": RIGHT}]}],
        [{"role": "assistant", "content": RIGHT}, {"role": "tool", "name": "run", "content": [{"type": "text",
                                                                                              "text": "ok"}]}],
        [{"role": "assistant", "content": None, "tool_calls": [{"name": "run"}]}],
        [{"role": "assistant", "content": ""}],
    ]
    assert reward(prompts=[[{"role": "user", "content": "q"}]] * 4, completions=completions,
                  completion_ids=[[1]] * 4, task_id=[TASK] * 4, trainer_state=None, log_extra=print,
                  log_metric=print) == [1.0, 1.0, 0.0, 0.0]


# Library and adapter calls of the wrong shape: each one VerifierError naming what is wrong (they were bare
# TypeErrors and AttributeErrors from inside, or a string taken as a list of characters and scored).
BAD_CALLS = {
    "a dataset that is not a name": (lambda: Verifier(5), "Verifier: dataset: expected a dataset's name"),
    "plus not a mapping": (lambda: Verifier("humaneval", plus=5), "Verifier: plus: expected a mapping"),
    "verify(None)": (lambda: rewards.verifier_for("humaneval").verify(None), "Verifier: samples: expected an "
                                                                              "iterable"),
    "stream(one mapping)": (lambda: list(rewards.verifier_for("humaneval").stream({"task_id": TASK})),
                            "Verifier: samples: expected an iterable of samples"),
    "a data source not a name": (lambda: rewards.compute_score(5, RIGHT, TASK), "rewards: data source: expected"),
    "solution strings as one string": (lambda: rewards.compute_score_batch(["humaneval"], RIGHT, [TASK]),
                                       "rewards: solution_strs: expected a list"),
    "TRL completions None": (lambda: rewards.trl_reward()(completions=None, task_id=[TASK]),
                             "rewards: completions: expected a list"),
    "TRL dataset not a name": (lambda: rewards.trl_reward(5), "rewards: data source: expected"),
    "OpenRLHF queries None": (lambda: rewards.openrlhf_reward()(None, None, None),
                              "rewards: queries: expected a list"),
}


@pytest.mark.parametrize("call", sorted(BAD_CALLS))
def test_bad_library_calls_are_named(call):
    make, message = BAD_CALLS[call]
    with pytest.raises(rewards.VerifierError, match=message):
        make()


def test_verl_numpy_batches():
    """verl hands the batch manager numpy arrays of objects: taken as lists."""
    np = pytest.importorskip("numpy")
    assert rewards.compute_score_batch(np.array(["humaneval", "humaneval"], dtype=object), [RIGHT, WRONG],
                                       np.array([TASK, TASK], dtype=object)) == [1.0, 0.0]


def test_openrlhf_query_that_does_not_start_with_its_prompt():
    """A query whose prompt was re-tokenised (here: a doubled BOS) still yields its response: the text after the
    last assistant header, not the whole chat cut at the first end of turn inside the prompt (a silent 0.0)."""
    prompt = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWrite it<|im_end|>\n<|im_start|>assistant\n"
    query = "<|endoftext|>" + prompt + RIGHT_PROGRAM + "<|im_end|>"
    assert [float(x) for x in rewards.openrlhf_reward()([query], [prompt], [TASK])["rewards"]] == [1.0]
