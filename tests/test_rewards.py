"""The reward functions, called exactly as each trainer calls them (read from the trainers' sources; no trainer
is installed): verl's NaiveRewardManager and BatchRewardManager, TRL's GRPOTrainer, OpenRLHF's custom
``reward_func``. Real sandboxes; one Verifier per process and dataset, as a trainer's workers keep one."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import pytest
from test_verifier import EXIT_ATTACKS, PROBLEMS

from pytest_humaneval import Status, rewards

TASK = "HumanEval/0"
RIGHT = ("Here is my solution:\n```python\n" + PROBLEMS[TASK].prompt + PROBLEMS[TASK].canonical_solution
         + "```\nIt compares every pair.")
WRONG = "<think>easy</think>\n```python\ndef has_close_elements(numbers, threshold):\n    return True\n```"


def fenced(body: str) -> str:
    return f"```python\ndef has_close_elements(numbers, threshold):\n{body}```"


def test_verl_single_as_the_naive_manager_calls_it():
    # verl/workers/reward_manager/naive.py: keyword arguments, one response at a time
    score = rewards.compute_score(data_source="openai_humaneval", solution_str=RIGHT, ground_truth=TASK,
                                  extra_info={"index": 0})
    assert score == 1.0 and isinstance(score, float)
    assert rewards.compute_score(data_source="humaneval", solution_str=WRONG,
                                 ground_truth='{"task_id": "HumanEval/0"}', extra_info=None) == 0.0
    assert rewards.compute_score(data_source="humaneval", solution_str=WRONG, ground_truth="",
                                 extra_info={"task_id": TASK}) == 0.0


def test_verl_batch_as_the_batch_manager_calls_it():
    # verl/workers/reward_manager/batch.py: compute_score(data_sources=..., solution_strs=..., ground_truths=...,
    # extra_infos=...), data_sources a numpy array of objects in verl (any sequence here)
    scores = rewards.compute_score_batch(data_sources=["humaneval"] * 3, solution_strs=[RIGHT, WRONG, RIGHT],
                                         ground_truths=[TASK, TASK, "HumanEval/1"], extra_infos=[None] * 3)
    assert scores == [1.0, 0.0, 0.0]


def test_trl_as_grpo_calls_it():
    # trl/trainer/grpo_trainer.py: reward_func(prompts=..., completions=..., completion_ids=..., **columns)
    reward = rewards.trl_reward("humaneval")
    assert reward.__name__ == "humaneval_humaneval"
    conversational = [[{"role": "assistant", "content": RIGHT}], [{"role": "assistant", "content": WRONG}]]
    assert reward(prompts=["p", "p"], completions=conversational, completion_ids=[[1], [2]],
                  task_id=[TASK, TASK], trainer_state=None) == [1.0, 0.0]
    assert reward(prompts=["p"], completions=[RIGHT], completion_ids=[[1]], task_id=[TASK]) == [1.0]
    with pytest.raises(rewards.VerifierError, match="expected the dataset's 'task_id' column"):
        reward(prompts=["p"], completions=[RIGHT], completion_ids=[[1]])


def test_openrlhf_as_its_remote_reward_model_calls_it(tmp_path):
    # openrlhf: a file given to --remote_rm_url defines reward_func(queries, prompts, labels); loaded by path
    module = tmp_path / "reward.py"
    module.write_text("from pytest_humaneval.rewards import openrlhf_reward\nreward_func = openrlhf_reward()\n")
    code = textwrap.dedent(f"""
        import importlib.util, json
        spec = importlib.util.spec_from_file_location("reward_func", {str(module)!r})
        reward_module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(reward_module)
        prompt = "<|im_start|>user\\nWrite it<|im_end|>\\n<|im_start|>assistant\\n"
        out = reward_module.reward_func([prompt + {RIGHT!r}, prompt + {WRONG!r}], [prompt, prompt],
                                        [{TASK!r}, {TASK!r}])
        print(json.dumps({{k: list(map(float, v)) if k != "extra_logs" else sorted(v) for k, v in out.items()}}))
    """)
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == ('{"rewards": [1.0, 0.0], "scores": [1.0, 0.0], '
                                    '"extra_logs": ["humaneval_passed"]}')


@pytest.mark.parametrize("attack", sorted(EXIT_ATTACKS))
def test_exit_attacks_earn_nothing(attack):
    answer = fenced(EXIT_ATTACKS[attack])
    assert rewards.compute_score("humaneval", answer, TASK) != 1.0
    assert rewards.trl_reward()(completions=[answer], task_id=[TASK])[0] != 1.0


def test_harness_failure_is_never_a_zero(monkeypatch):
    """A sample the harness could not judge raises, is NaN or None: never 0.0, whatever the trainer does next."""
    verifier = rewards.verifier_for("humaneval")
    failed = Status.HARNESS_ERROR

    def broken(samples):
        return [rewards.Verdict(i, TASK, failed, "the sandbox could not start", 0.0) for i, _ in enumerate(samples)]

    monkeypatch.setattr(verifier, "verify", broken)
    with pytest.raises(rewards.RewardUnavailable, match="no reward: harness_error: the sandbox could not start"):
        rewards.compute_score("humaneval", RIGHT, TASK)
    assert math.isnan(rewards.compute_score("humaneval", RIGHT, TASK, harness_error="nan"))
    assert rewards.trl_reward()(completions=[RIGHT], task_id=[TASK]) == [None]
    with pytest.raises(rewards.VerifierError, match="harness_error: expected one of raise, nan, none"):
        rewards.compute_score("humaneval", RIGHT, TASK, harness_error="zero")


def test_one_verifier_per_process_and_bad_options():
    assert rewards.verifier_for("humaneval") is rewards.verifier_for("openai_humaneval")
    loose = rewards.verifier_for("humaneval-impossible-oneoff", impossible_instruction="pass_all")  # the Verifier's
    assert "pass all tests" in loose.problems["HumanEval/0/oneoff"].prompt  # keyword, as the other options are
    with pytest.raises(rewards.VerifierError, match="rewards: sandbox_fusion_url: unknown option"):
        rewards.compute_score("humaneval", RIGHT, TASK, sandbox_fusion_url="http://x")
    with pytest.raises(rewards.VerifierError, match="ground_truth: expected the task id"):
        rewards.compute_score("humaneval", RIGHT, None)
