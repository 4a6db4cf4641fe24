#!/usr/bin/env bash
# verl: GRPO on HumanEval, with rewards judged on the Ray cluster verl runs on.
#
#   pip install "pytest-humaneval[ray]"      # in verl's environment, on every node
#   bash examples/trainers/verl_grpo_humaneval.sh [more verl overrides]
#
# Written against verl b178a3cd (verl/trainer/config/ppo_trainer.yaml, verl/trainer/ppo/reward.py,
# verl/experimental/reward_loop/). verl loads compute_score with custom_reward_function.path and .name, and passes
# custom_reward_function.reward_kwargs to every call as keywords: cluster=true there judges on a RayVerifier over the
# Ray connection of the process that calls it. verl's config has no reward_kwargs key, hence the "+" below.
#
# With the reward loop (reward_model.use_reward_loop, on by default) and no reward model, each agent loop worker
# (actor_rollout_ref.rollout.agent.num_workers, 8 by default) starts a RewardLoopWorker actor on its node, which calls
# compute_score from threads of its event loop's executor; each of them makes its own RayVerifier at its first
# reward, and they share one judging actor on every node (the processes of one Ray job that judge alike do), whose
# sandboxes are the node's CPUs.
#
# The data: one row per HumanEval problem in verl's format (data_source, a chat prompt, reward_model.ground_truth =
# the task id), the same file for training and validation (an example, not a benchmark protocol).
set -euo pipefail

DATA=${DATA:-$HOME/data/humaneval}
python3 - "$DATA" <<'PY'
import os, sys
import pandas as pd
from pytest_humaneval.data.dataset import load_problems

rows = [{"data_source": "humaneval", "ability": "code",
         "prompt": [{"role": "user", "content": "Complete this Python function. Answer with the whole function in "
                                                "a ```python block.\n\n" + problem.prompt}],
         "reward_model": {"style": "rule", "ground_truth": problem.task_id},
         "extra_info": {"index": index, "task_id": problem.task_id}}
        for index, problem in enumerate(load_problems()[1])]
os.makedirs(sys.argv[1], exist_ok=True)
pd.DataFrame(rows).to_parquet(os.path.join(sys.argv[1], "train.parquet"))
PY

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files="$DATA/train.parquet" \
    data.val_files="$DATA/train.parquet" \
    data.train_batch_size=32 \
    data.max_prompt_length=512 \
    data.max_response_length=1024 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-Coder-1.5B-Instruct \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=8 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.5 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    algorithm.use_kl_in_reward=False \
    custom_reward_function.path=pkg://pytest_humaneval.rewards \
    custom_reward_function.name=compute_score \
    +custom_reward_function.reward_kwargs.cluster=true \
    trainer.logger='["console"]' \
    trainer.project_name=humaneval \
    trainer.experiment_name=grpo-cluster-rewards \
    trainer.n_gpus_per_node="${GPUS:-8}" \
    trainer.nnodes="${NODES:-1}" \
    trainer.total_epochs=1 "$@"
