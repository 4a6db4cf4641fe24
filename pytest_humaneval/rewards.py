"""Reward functions for the RL trainers people use, over one long-lived ``Verifier`` per process and dataset (its
sandboxes start at the first call, and every later step reuses them). No pytest, no trainer imported.

- **verl**: ``compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)`` and its batch form
  ``compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, **kwargs)``: point
  ``custom_reward_function.path`` at this module's file, ``name`` at either; ``reward_kwargs`` become keyword
  arguments (``timeout_s``, ``memory_mb``, ``isolation``, ``harness_error``).
- **TRL**: ``trl_reward(dataset)`` makes a ``reward_funcs`` entry, ``f(completions, task_id, **columns)``.
- **OpenRLHF**: ``openrlhf_reward(dataset)`` makes the ``reward_func(queries, prompts, labels)`` of a file given to
  ``--remote_rm_url``.

Every answer goes through the extraction a live model's answer gets in a pytest run (fences, reasoning, whole
programs: ``completions/extract.py``), then the judge. A verdict on the candidate is 1.0 or 0.0; a sample the
harness could not judge (``harness_error``) is never a 0: by ``harness_error`` it raises ``RewardUnavailable``
(``"raise"``), is NaN (``"nan"``) or None (``"none"``, TRL's way of leaving a reward out).
"""

from __future__ import annotations

import importlib
import json
import math
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .completions.extract import extract
from .engine import Verdict, Verifier, VerifierError

__all__ = ["DATA_SOURCES", "RewardUnavailable", "Verdict", "VerifierError", "compute_score", "compute_score_batch",
           "judge_answers", "openrlhf_reward", "trl_reward", "verifier_for"]

# Names trainers' datasets carry for the datasets a config names (verl's data_source column, say).
DATA_SOURCES = {"openai_humaneval": "humaneval", "openai/openai_humaneval": "humaneval",
                "evalplus/humanevalplus": "humanevalplus", "evalplus/mbppplus": "mbppplus"}
HARNESS_ERROR = ("raise", "nan", "none")
OPTIONS = ("timeout_s", "memory_mb", "isolation", "workers", "plus", "impossible_instruction")


class RewardUnavailable(VerifierError):
    """The harness could not judge a sample (its sandbox failed): no reward is known, and none is made up."""


_verifiers: dict[tuple[int, str, str], Verifier] = {}
_lock = threading.Lock()


def verifier_for(dataset: str, **options: Any) -> Verifier:
    """This process's Verifier of ``dataset`` with ``options`` (``Verifier``'s keyword arguments), made on first
    use and kept: a trainer's step never starts sandboxes. A forked process makes its own."""
    unknown = sorted(set(options) - set(OPTIONS) - {"dedupe", "progress"})
    if unknown:
        raise VerifierError(f"rewards: {unknown[0]}: unknown option (expected one of: {', '.join(OPTIONS)}, "
                            "harness_error)")
    dataset = DATA_SOURCES.get(dataset, dataset)
    key = (os.getpid(), dataset, json.dumps(options, sort_keys=True, default=str))
    with _lock:
        found = _verifiers.get(key)
        if found is None:
            found = _verifiers[key] = Verifier(dataset, **options)
        return found


def judge_answers(dataset: str, task_ids: Sequence[str], answers: Sequence[str], **options: Any) -> list[Verdict]:
    """The verdicts of model answers (raw text: prose, fences and reasoning allowed) to ``task_ids``."""
    if len(task_ids) != len(answers):
        raise VerifierError(f"rewards: expected one task id per answer, found {len(task_ids)} task ids for "
                            f"{len(answers)} answers")
    verifier = verifier_for(dataset, **options)
    return verifier.verify(_sample(verifier, task_id, answer, index)
                           for index, (task_id, answer) in enumerate(zip(task_ids, answers, strict=True)))


def _sample(verifier: Verifier, task_id: Any, answer: Any, index: int) -> Mapping[str, Any]:
    problem = verifier.problems.get(task_id) if isinstance(task_id, str) else None
    if problem is None:
        return {"task_id": task_id}  # the Verifier names what is wrong with it
    if not isinstance(answer, str):
        raise VerifierError(f"sample {index}: answer: expected the model's text, found {type(answer).__name__}")
    found = extract(answer, problem.entry_point, problem.prompt)
    sample = {"task_id": task_id, "completion": found.completion}
    return sample if found.program is None else {**sample, "solution": found.program}


def _reward(verdict: Verdict, harness_error: str) -> float | None:
    reward = verdict.reward
    if reward is not None:
        return reward
    if harness_error == "raise":
        raise RewardUnavailable(f"sample {verdict.index} ({verdict.task_id}): no reward: {verdict.status.value}: "
                                f"{verdict.detail}")
    return math.nan if harness_error == "nan" else None


def _policy(harness_error: str) -> str:
    if harness_error not in HARNESS_ERROR:
        raise VerifierError(f"rewards: harness_error: expected one of {', '.join(HARNESS_ERROR)}, "
                            f"found {harness_error!r}")
    return harness_error


def _task_id(ground_truth: Any, extra_info: Any, index: int) -> Any:
    """verl's ground truth names the task: its id, or a mapping (or JSON object) with ``task_id``; else
    ``extra_info["task_id"]``."""
    if isinstance(ground_truth, str) and ground_truth.lstrip().startswith("{"):
        try:
            ground_truth = json.loads(ground_truth)
        except ValueError:
            pass
    if isinstance(ground_truth, Mapping):
        ground_truth = ground_truth.get("task_id")
    if not ground_truth and isinstance(extra_info, Mapping):
        ground_truth = extra_info.get("task_id")
    if not isinstance(ground_truth, str):
        raise VerifierError(f"sample {index}: ground_truth: expected the task id (or a mapping with task_id), "
                            f"found {type(ground_truth).__name__}")
    return ground_truth


# -- verl
def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, *,
                  harness_error: str = "raise", **options: Any) -> float:
    """verl's ``compute_score``: 1.0 when the answer passes the dataset's test, else 0.0 (see the module's
    docstring for a sample the harness could not judge)."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info],
                               harness_error=harness_error, **options)[0]


def compute_score_batch(data_sources: Sequence[str], solution_strs: Sequence[str], ground_truths: Sequence[Any],
                        extra_infos: Sequence[Any] | None = None, *, harness_error: str = "raise",
                        **options: Any) -> list[float]:
    """verl's batch form (``reward_manager: batch``): the batch is judged at once, over every sandbox."""
    policy = _policy(harness_error)
    extras = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    task_ids = [_task_id(truth, extra, index) for index, (truth, extra) in enumerate(zip(ground_truths, extras,
                                                                                          strict=True))]
    rewards: list[float] = [math.nan] * len(solution_strs)
    for source in sorted(set(data_sources)):  # each dataset in its own Verifier
        where = [i for i, each in enumerate(data_sources) if each == source]
        verdicts = judge_answers(source, [task_ids[i] for i in where], [solution_strs[i] for i in where], **options)
        for i, verdict in zip(where, verdicts, strict=True):
            reward = _reward(verdict, policy)
            rewards[i] = math.nan if reward is None else reward
    return rewards


# -- TRL
def trl_reward(dataset: str = "humaneval", *, column: str = "task_id", harness_error: str = "none",
               **options: Any) -> Callable[..., list[float | None]]:
    """A ``reward_funcs`` entry for TRL's trainers (GRPO, RLOO...): called as ``f(prompts=..., completions=...,
    completion_ids=..., **columns)``, where the dataset's ``column`` holds each prompt's task id. Completions may
    be text or conversations (the last message's content is the answer). A sample the harness could not judge
    is None by default, which TRL leaves out of the sum."""
    policy = _policy(harness_error)

    def reward(completions: Sequence[Any], **columns: Any) -> list[float | None]:
        if column not in columns:
            raise VerifierError(f"rewards: expected the dataset's {column!r} column (the task ids) among the "
                                f"reward function's arguments, found {', '.join(sorted(columns)) or 'none'}")
        answers = [_text(completion) for completion in completions]
        return [_reward(v, policy) for v in judge_answers(dataset, list(columns[column]), answers, **options)]

    reward.__name__ = f"humaneval_{dataset.replace('-', '_').replace('/', '_')}"  # TRL logs rewards by name
    return reward


def _text(completion: Any) -> Any:
    if isinstance(completion, list) and completion and isinstance(completion[-1], Mapping):
        return completion[-1].get("content")
    return completion


# -- OpenRLHF
def openrlhf_reward(dataset: str = "humaneval", *, harness_error: str = "raise",
                    **options: Any) -> Callable[[Sequence[str], Sequence[str], Sequence[Any]], dict[str, Any]]:
    """OpenRLHF's ``reward_func(queries, prompts, labels)``: ``queries`` are prompt + response, ``labels`` the task
    ids (``--label_key``). Returns ``{"rewards", "scores", "extra_logs"}`` (torch tensors when torch is
    there, as OpenRLHF expects; lists otherwise)."""
    policy = _policy(harness_error)

    def reward_func(queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any]) -> dict[str, Any]:
        answers = [query[len(prompt):] if query.startswith(prompt) else query
                   for query, prompt in zip(queries, prompts, strict=True)]
        verdicts = judge_answers(dataset, [_task_id(label, None, i) for i, label in enumerate(labels)], answers,
                                 **options)
        rewards = [_reward(v, policy) for v in verdicts]
        values = [math.nan if r is None else r for r in rewards]
        return {"rewards": _tensor(values), "scores": _tensor(values),
                "extra_logs": {"humaneval_passed": _tensor([float(v.passed) for v in verdicts])}}

    return reward_func


def _tensor(values: Iterable[float]) -> Any:
    try:
        torch = importlib.import_module("torch")  # not a dependency: OpenRLHF's processes have it
    except ImportError:
        return list(values)
    return torch.tensor(list(values), dtype=torch.float32)
