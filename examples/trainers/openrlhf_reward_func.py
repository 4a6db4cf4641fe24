"""OpenRLHF: a reward file whose HumanEval rewards are judged on the Ray cluster OpenRLHF runs on.

Give this file's path to OpenRLHF, with the dataset's task id as the label (``pip install "pytest-humaneval[ray]"``
where OpenRLHF runs)::

    python3 -m openrlhf.cli.train_ppo_ray ... \\
        --reward.remote_url /path/to/examples/trainers/openrlhf_reward_func.py \\
        --data.label_key task_id

(``--remote_rm_url`` and ``--label_key`` before OpenRLHF v0.10.2.) OpenRLHF (openrlhf/utils/agent.py,
``SingleTurnAgentExecutor``, at 3c3be623) loads the file in each vLLM rollout actor (one per ``--vllm.num_engines``)
as the module ``reward_func``, and calls ``reward_func([query], [prompt], [label])`` for each sample through
``asyncio.to_thread``. ``cluster=True`` uses the Ray connection of the actor it runs in. Each rollout actor makes its
own ``RayVerifier`` at its first reward; they share one judging actor on every node (the processes of one Ray job
that judge alike do), whose sandboxes are the node's CPUs.

Run by itself (``python examples/trainers/openrlhf_reward_func.py``) it judges a right and a wrong answer, as
OpenRLHF hands them over, and prints ``[1.0, 0.0]`` and the ``RayVerifier`` that judged them: on the cluster
``RAY_ADDRESS`` names, else on a Ray it starts on this machine.
"""

from __future__ import annotations

from pytest_humaneval.rewards import openrlhf_reward, verifier_for

reward_func = openrlhf_reward("humaneval", cluster=True)


def main() -> None:
    prompt = "<|im_start|>user\nComplete add(x, y).<|im_end|>\n<|im_start|>assistant\n"
    right = "def add(x: int, y: int):\n    return x + y\n<|im_end|>"  # decoded with special tokens kept
    wrong = "def add(x: int, y: int):\n    return x - y\n<|im_end|>"
    found = reward_func([prompt + right, prompt + wrong], [prompt, prompt], ["HumanEval/53", "HumanEval/53"])
    print([float(reward) for reward in found["rewards"]])
    print(verifier_for("humaneval", cluster=True))  # what judged them: RayVerifier('...', nodes=N)


if __name__ == "__main__":
    main()
