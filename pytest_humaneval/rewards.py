"""Reward functions for the RL trainers people use (verl, TRL, OpenRLHF), over one long-lived ``Verifier`` per
process and dataset (a ``RayVerifier`` with the option ``cluster``): ``pytest_humaneval.engine.rewards`` says how
each is called.

Trainers load this file two ways: as a module of the installed package (an import; verl's
``pkg://pytest_humaneval.rewards``) and by its path (verl's ``custom_reward_function.path``, OpenRLHF's
``--remote_rm_url``), under a name of their own and with no parent package. The import below is absolute so that
both work and give the same objects: one Verifier per process and dataset whichever way the file was loaded, and
functions that pickle by reference (verl's PRIME manager sends ``compute_score`` to its process pool by pickle).
"""

from __future__ import annotations

from pytest_humaneval.engine.rewards import (
    DATA_SOURCES,
    GROUND_TRUTH,
    TRAINER_KEYWORDS,
    RewardUnavailable,
    Verdict,
    VerifierError,
    answer_text,
    compute_score,
    compute_score_batch,
    judge_answers,
    openrlhf_reward,
    trl_reward,
    verifier_for,
)

__all__ = ["DATA_SOURCES", "GROUND_TRUTH", "TRAINER_KEYWORDS", "RewardUnavailable", "Verdict", "VerifierError",
           "answer_text", "compute_score", "compute_score_batch", "judge_answers", "openrlhf_reward", "trl_reward",
           "verifier_for"]
