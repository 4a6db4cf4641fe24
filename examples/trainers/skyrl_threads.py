"""SkyRL: HumanEval rewards judged on a Ray cluster from SkyRL's environment threads.

SkyRL (skyrl/train/generators/skyrl_gym_generator.py, at a9564572) calls each environment's ``step`` from a
``ThreadPoolExecutor`` of ``environment.skyrl_gym.max_env_workers`` threads (32), inside its ``skyrl_entrypoint``
Ray task. An environment whose ``step`` judges the model's answer (register it as SkyRL's examples do, with
``skyrl_gym.envs.register``; the task id is the row's ``reward_spec.ground_truth``)::

    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
    from pytest_humaneval.rewards import RewardUnavailable, judge_answers

    class HumanEvalEnv(BaseTextEnv):
        def __init__(self, env_config=None, extras={}):
            super().__init__()
            self.task_id = extras["reward_spec"]["ground_truth"]

        def step(self, action: str) -> BaseTextEnvStepOutput:
            verdict, = judge_answers("humaneval", [self.task_id], [action], cluster=True)
            if verdict.reward is None:  # the harness failed, not the answer: no reward is made up
                raise RewardUnavailable(f"{self.task_id}: {verdict.detail}")
            return BaseTextEnvStepOutput(observations=[], reward=verdict.reward, done=True,
                                         metadata={"status": verdict.status.value})

``cluster=True`` uses the Ray connection of the task it runs in; every thread shares the process's one
``RayVerifier``, made at the first step and kept.

This file does what those threads do, without SkyRL: 32 threads each judge one answer at a time, a right and a
wrong one for each of the first 12 HumanEval problems; it prints the rewards (twelve 1.0, then twelve 0.0) and the
``RayVerifier`` that judged them::

    pip install "pytest-humaneval[ray]"
    python examples/trainers/skyrl_threads.py   # on the cluster RAY_ADDRESS names, else on a Ray started here
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from pytest_humaneval.data.dataset import load_problems
from pytest_humaneval.rewards import RewardUnavailable, judge_answers, verifier_for


def step(task_id: str, answer: str) -> float:
    """What ``HumanEvalEnv.step`` above computes: one answer's reward."""
    verdict, = judge_answers("humaneval", [task_id], [answer], cluster=True)
    if verdict.reward is None:
        raise RewardUnavailable(f"{task_id}: {verdict.detail}")
    return verdict.reward


def main() -> None:
    problems = load_problems()[1][:12]
    right = [(p.task_id, f"```python\n{p.prompt}{p.canonical_solution}```") for p in problems]
    wrong = [(p.task_id, f"```python\n{p.prompt}    return None\n```") for p in problems]
    task_ids, answers = zip(*right, *wrong, strict=True)
    with ThreadPoolExecutor(max_workers=32, thread_name_prefix="skyrl-gym-env-") as threads:
        print(list(threads.map(step, task_ids, answers)))
    print(verifier_for("humaneval", cluster=True))  # what judged them: RayVerifier('...', nodes=N)


if __name__ == "__main__":
    main()
