"""TRL (GRPOTrainer, RLOOTrainer): HumanEval rewards judged on a Ray cluster.

    pip install "pytest-humaneval[ray]"
    ray start --head                        # or name a cluster you have: RAY_ADDRESS=host:6379
    python examples/trainers/trl_grpo.py    # [1.0, 0.0] twice (a right and a wrong answer), then the RayVerifier

In a training script, list one of the two functions below in ``reward_funcs``; the dataset needs a ``task_id``
column (``column=`` names another)::

    from trl import GRPOConfig, GRPOTrainer
    trainer = GRPOTrainer(model="Qwen/Qwen2.5-Coder-0.5B-Instruct", reward_funcs=[humaneval_async],
                          train_dataset=dataset, args=GRPOConfig(output_dir="grpo-humaneval"))

TRL (trl/trainer/grpo_trainer.py, ``_calculate_rewards``, at f2cd5771) calls an ordinary reward function in the
trainer's process, one function after the other, and runs every ``async def`` one together on an event loop of its
own (a daemon thread), awaiting them with ``asyncio.gather``: ``asynchronous=True`` makes that kind, judged with
``RayVerifier.averify``. The trainer's process is the Ray driver: ``cluster="auto"`` connects it to the cluster
``ray start`` started on this machine (``RAY_ADDRESS``, when set, comes first), once, at the first reward.
"""

from __future__ import annotations

import asyncio
import threading

from pytest_humaneval.rewards import trl_reward, verifier_for

humaneval = trl_reward("humaneval", cluster="auto")
humaneval_async = trl_reward("humaneval", cluster="auto", asynchronous=True)


def main() -> None:
    """Both functions called with the keywords GRPOTrainer passes, on a right and a wrong answer to HumanEval/53."""
    right = "```python\ndef add(x: int, y: int):\n    return x + y\n```"
    wrong = "```python\ndef add(x: int, y: int):\n    return x - y\n```"
    batch = {"prompts": ["Complete add(x, y)."] * 2, "completions": [right, wrong], "completion_ids": [[0], [0]],
             "task_id": ["HumanEval/53"] * 2, "trainer_state": None, "log_extra": print, "log_metric": print}
    print(humaneval(**batch))
    loop = asyncio.new_event_loop()  # TRL's daemon event loop for asynchronous reward functions
    threading.Thread(target=loop.run_forever, daemon=True).start()
    print(asyncio.run_coroutine_threadsafe(humaneval_async(**batch), loop).result())
    print(verifier_for("humaneval", cluster="auto"))  # what judged them: RayVerifier('...', nodes=N)


if __name__ == "__main__":
    main()
