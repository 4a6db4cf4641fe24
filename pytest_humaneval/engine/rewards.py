"""Reward functions for the RL trainers people use, over one long-lived ``Verifier`` per process and dataset (its
sandboxes start at the first call, and every later step reuses them). No pytest, no trainer imported. Their face
is ``pytest_humaneval.rewards``, a file trainers also load by its path.

- **verl**: ``compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)`` and its batch form
  ``compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, **kwargs)``: point
  ``custom_reward_function.path`` at this module's file, ``name`` at either; ``reward_kwargs`` become keyword
  arguments (``timeout_s``, ``memory_mb``, ``isolation``, ``harness_error``).
- **TRL**: ``trl_reward(dataset)`` makes a ``reward_funcs`` entry, ``f(completions, task_id, **columns)``.
- **OpenRLHF**: ``openrlhf_reward(dataset)`` makes the ``reward_func(queries, prompts, labels, **kwargs)`` of a file
  given to ``--remote_rm_url``.

Every adapter takes and ignores the keywords its trainer may add (``TRAINER_KEYWORDS``; TRL's and OpenRLHF's any).
An answer is first cleaned as the trainer's tokenizer may leave it (``answer_text``: chat-template and
end-of-sequence tokens, content parts, a None content), then goes through the extraction a live model's answer
gets in a pytest run (fences, reasoning, whole programs: ``completions/extract.py``), then the judge. A verdict
on the candidate is 1.0 or 0.0; a sample the harness could not judge (``harness_error``) is never a 0: by
``harness_error`` it raises ``RewardUnavailable`` (``"raise"``), is NaN (``"nan"``) or None (``"none"``, TRL's
way of leaving a reward out).

``cluster`` (every adapter's option): None or False, this process's ``Verifier``; True, a ``RayVerifier`` on the Ray
connection this process has (a trainer's Ray actor); a string, a Ray address as ``ray.init`` takes it. Ray is
imported only then.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib
import json
import math
import multiprocessing
import os
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Union, overload

from ..completions.extract import extract
from ..data.dataset import DatasetError, Problem
from ..data.ground_truth import holds_tests, problem_from_ground_truth
from .verifier import GROUND_TRUTH, Verdict, Verifier, VerifierError

if TYPE_CHECKING:  # the cluster's module is imported when a cluster is asked for, and ray only then
    from .cluster import RayVerifier

__all__ = ["DATA_SOURCES", "GROUND_TRUTH", "TRAINER_KEYWORDS", "RewardUnavailable", "Verdict", "VerifierError",
           "answer_text", "compute_score", "compute_score_batch", "judge_answers", "openrlhf_reward", "trl_reward",
           "verifier_for"]

# Names trainers' datasets carry for the datasets a config names (verl's data_source column, say).
DATA_SOURCES = {"openai_humaneval": "humaneval", "openai/openai_humaneval": "humaneval",
                "evalplus/humanevalplus": "humanevalplus", "evalplus/mbppplus": "mbppplus"}
HARNESS_ERROR = ("raise", "nan", "none")
OPTIONS = ("timeout_s", "memory_mb", "isolation", "workers", "plus", "impossible_instruction", "allow_basic", "compare",
           "cluster")
CLUSTER_EXPECTED = ("None or False (this machine's Verifier), True (the Ray cluster this process is connected to) "
                    "or a Ray address (\"auto\", \"ray://head:10001\", \"host:6379\")")
NOT_ADDRESSES = ("", "true", "false", "none", "null", "yes", "no")  # a boolean or nothing spelled as text: a slip
# What verl adds to a reward function's keywords on its own (its reward loop with a reward router), taken and
# ignored; any other keyword is an option of ours, and an unknown one an error (a typo in reward_kwargs must not
# silently change a benchmark).
TRAINER_KEYWORDS = ("reward_router_address", "reward_model_tokenizer")

# The end of a model's turn as a tokenizer leaves it in decoded text when special tokens are kept (OpenRLHF decodes
# so): Qwen/ChatML, Llama 3, DeepSeek, Gemma, Phi, gpt-oss, Cohere, DeepSeek-Coder. Nothing after one is the answer
# (padding, a next turn). These never stand in code; "</s>" and "<eos>" may (HTML, a string), so they are only
# taken off the end (END_TAIL).
END_OF_TURN = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<|eom_id|>", "<\uff5cend\u2581of\u2581"
               "sentence\uff5c>", "<end_of_turn>", "<|end|>", "<|return|>", "<|END_OF_TURN_TOKEN|>", "<|EOT|>")
END_TAIL = ("</s>", "<eos>", "<pad>", "<|pad|>")
# A turn's opening when a prompt was not cut off the query: the assistant's header of each family.
TURN_HEADERS = ("<|im_start|>assistant\n", "<|start_header_id|>assistant<|end_header_id|>\n\n",
                "<|start_header_id|>assistant<|end_header_id|>\n", "<\uff5cAssistant\uff5c>", "<start_of_turn>model\n",
                "<|assistant|>\n", "<|start|>assistant", "[/INST]")


class OpenRLHFRewards(TypedDict):
    """What OpenRLHF's reward function returns: its rewards, scores and logs (torch tensors, or lists)."""

    rewards: Any
    scores: Any
    extra_logs: dict[str, object]


class RewardUnavailable(VerifierError):
    """The harness could not judge a sample (its sandbox failed): no reward is known, and none is made up."""


Judging = Union[Verifier, "RayVerifier"]
_verifiers: dict[tuple[int, str, str, str | None, str], Judging] = {}
_lock = threading.Lock()
_closing_at_exit = False


def verifier_for(dataset: str, **options: Any) -> Judging:
    """This process's Verifier of ``dataset`` with ``options`` (``Verifier``'s keyword arguments, and ``cluster``),
    made on first use and kept: a trainer's step never starts sandboxes. A forked process makes its own. In a process
    of a process pool (verl's PRIME manager runs 64), which judges one sample per call, it has one sandbox unless
    ``workers`` says otherwise: a pool of one per CPU in each of them would start a CPU's worth per process.

    With ``cluster`` (True, or a Ray address), a ``RayVerifier`` instead, kept the same way and closed at exit (each
    node's actor stops its sandboxes); its ``workers`` are sandboxes per node, whatever process calls it."""
    on_cluster, address = _checked_options(options)
    options.pop("cluster", None)
    if not on_cluster and multiprocessing.parent_process() is not None:
        options.setdefault("workers", 1)
    dataset = _dataset_name(dataset)
    where = ("ray" if on_cluster else "local", address)
    key = (os.getpid(), dataset, *where, json.dumps(options, sort_keys=True, default=str))
    with _lock:
        found = _verifiers.get(key)
        if found is None:
            if on_cluster:
                found = _verifiers[key] = _ray_verifier(dataset, address, options)
            else:
                found = _verifiers[key] = Verifier(dataset, **options)
                found._life.kept = True  # closed at exit without a warning: keeping it is this module's promise
        return found


def _checked_options(options: Mapping[str, object]) -> tuple[bool, str | None]:
    """``options`` checked (an unknown one is an error, not ignored): whether they ask for a cluster, and its
    address (None: the connection this process has)."""
    unknown = sorted(set(options) - set(OPTIONS) - {"dedupe", "progress"})
    if unknown:
        raise VerifierError(f"rewards: {unknown[0]}: unknown option (expected one of: {', '.join(OPTIONS)}, "
                            "harness_error)")
    cluster = options.get("cluster")
    if cluster is None or cluster is False:
        return False, None
    if cluster is True:
        return True, None
    if isinstance(cluster, str) and cluster.strip().lower() not in NOT_ADDRESSES:
        return True, cluster.strip()
    raise VerifierError(f"rewards: cluster: expected {CLUSTER_EXPECTED}, found {cluster!r}")


def _ray_verifier(dataset: str, address: str | None, options: Mapping[str, Any]) -> RayVerifier:
    global _closing_at_exit
    from .cluster import RayVerifier  # imports ray when it is made, never before

    made = RayVerifier(dataset, address=address, **options)
    if not _closing_at_exit:  # registered after ray.init's own exit handler, so it runs first, with Ray still up
        atexit.register(_close_clusters)
        _closing_at_exit = True
    return made


def _close_clusters() -> None:
    """Close this process's kept RayVerifiers and forget them (at exit; a test's cluster going away): each node's
    actor stops its sandboxes and removes its copy of a dataset file, which an actor killed with its driver leaves
    behind. Quietly: a cluster already gone has nothing left to close."""
    with _lock:
        kept = [(key, found) for key, found in _verifiers.items()
                if key[0] == os.getpid() and not isinstance(found, Verifier)]
        for key, _ in kept:
            del _verifiers[key]
    for _, found in kept:
        try:
            found.close()
        except Exception:  # ray shut down before, or its cluster is gone
            pass


def judge_answers(dataset: str, task_ids: Sequence[str], answers: Sequence[Any], **options: Any) -> list[Verdict]:
    """The verdicts of model answers (raw text: prose, fences and reasoning allowed; see ``answer_text``) to
    ``task_ids``."""
    return _judged(dataset, task_ids, answers, options)


def _judged(dataset: str, task_ids: Sequence[Any], answers: Sequence[Any], options: dict[str, Any],
            indices: Sequence[int] | None = None) -> list[Verdict]:
    """``judge_answers``; ``indices``: each sample's position in the caller's batch, for what an error names (a
    batch judged in groups, one per dataset)."""
    task_ids, answers = _listed("task ids", task_ids), _listed("answers", answers)
    _same_length("task ids", task_ids, "answers", answers)
    verifier = verifier_for(dataset, **options)
    return verifier.verify(_samples(verifier, _with_problems(verifier, dataset, task_ids, indices), answers))


async def _ajudge_answers(dataset: str, task_ids: Sequence[str], answers: Sequence[Any],
                          **options: Any) -> list[Verdict]:
    """``judge_answers`` for an event loop: the Verifier is made (the first time) and the samples judged in threads,
    and the loop goes on meanwhile."""
    task_ids, answers = _listed("task ids", task_ids), _listed("answers", answers)
    _same_length("task ids", task_ids, "answers", answers)
    verifier = await asyncio.to_thread(lambda: verifier_for(dataset, **options))
    return await verifier.averify(_samples(verifier, _with_problems(verifier, dataset, task_ids), answers))


def _with_problems(verifier: Judging, dataset: str, task_ids: list[Any],
                   indices: Sequence[int] | None = None) -> list[Any]:
    """The task ids to judge: with ``dataset`` ``ground-truth``, each is the tests themselves (a row's ground truth),
    made a problem the Verifier then knows, and named by its tests (a text seen twice in a call read once: a
    group's samples share theirs); otherwise they are the task ids."""
    if _dataset_name(dataset) != GROUND_TRUTH:
        return task_ids
    problems: list[Problem] = []
    read: dict[str, Problem] = {}
    for index, truth in enumerate(task_ids):
        found = read.get(truth) if isinstance(truth, str) else None
        if found is None:
            try:
                found = problem_from_ground_truth(truth, f"sample {indices[index] if indices else index}: "
                                                         "ground_truth")
            except DatasetError as exc:
                raise VerifierError(str(exc)) from None
            if isinstance(truth, str):
                read[truth] = found
        problems.append(found)
    verifier.add_problems(problems)
    return [problem.task_id for problem in problems]


def _samples(verifier: Judging, task_ids: list[Any], answers: list[Any]) -> list[Mapping[str, Any]]:
    return [_sample(verifier, task_id, answer, index)
            for index, (task_id, answer) in enumerate(zip(task_ids, answers, strict=True))]


def _listed(name: str, values: Any) -> list[Any]:
    """A batch argument as a list: any sized iterable (a list, a tuple, verl's numpy arrays), never a string."""
    if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__len__") or \
            not hasattr(values, "__iter__"):
        raise VerifierError(f"rewards: {name}: expected a list (one per sample), found {type(values).__name__}")
    return list(values)


def _dataset_name(dataset: Any) -> str:
    if not isinstance(dataset, str):
        raise VerifierError(f"rewards: data source: expected a dataset's name (humaneval, humanevalplus, "
                            f"mbppplus...), found {type(dataset).__name__}")
    return DATA_SOURCES.get(dataset, dataset)


def _same_length(name: str, values: Sequence[Any], other_name: str, others: Sequence[Any]) -> None:
    if len(values) != len(others):
        raise VerifierError(f"rewards: expected one of the {name} per one of the {other_name}, found {len(values)} "
                            f"{name} for {len(others)} {other_name}")


def _sample(verifier: Judging, task_id: Any, answer: Any, index: int) -> Mapping[str, Any]:
    problem = verifier.problems.get(task_id) if isinstance(task_id, str) else None
    if problem is None:
        return {"task_id": task_id}  # the Verifier names what is wrong with it
    found = extract(answer_text(answer, index), problem.entry_point, problem.prompt)
    sample = {"task_id": task_id, "completion": found.completion}
    return sample if found.program is None else {**sample, "solution": found.program}


def answer_text(answer: Any, index: int = 0) -> str:
    """A model's answer as a trainer hands it over, made the text a live model's answer would be: a
    conversation's last assistant message (TRL), a content of parts (their text parts), None (no answer: scored as
    no code, a 0), and text decoded with special tokens kept (OpenRLHF): cut at its end of turn, its assistant
    header taken off. Linear in the answer's length."""
    if isinstance(answer, list) and answer and all(isinstance(message, Mapping) for message in answer):
        replies = [m for m in answer if m.get("role") == "assistant"] or answer
        answer = replies[-1].get("content")
    if isinstance(answer, list):  # content parts: [{"type": "text", "text": ...}, ...]
        answer = "".join(part.get("text") or "" if isinstance(part, Mapping) else part if isinstance(part, str)
                         else _refuse(index, part) for part in answer)
    if answer is None:
        return ""
    if not isinstance(answer, str):
        return _refuse(index, answer)
    text: str = answer
    end = min((at for at in (text.find(token) for token in END_OF_TURN) if at >= 0), default=len(text))
    cut = end
    while True:  # a run of padding at the end, by index (a slice per token would be quadratic)
        while end and text[end - 1] in " \t\r\n":
            end -= 1
        token = next((token for token in END_TAIL if text.endswith(token, 0, end)), None)
        if token is None:
            break
        end = cut = end - len(token)
    text = text[:cut]
    start = text.lstrip()
    header = next((header for header in TURN_HEADERS if start.startswith(header)), "")
    return start[len(header):] if header else text


def _refuse(index: int, found: Any) -> str:
    raise VerifierError(f"sample {index}: answer: expected the model's text (a string, a conversation or content "
                        f"parts), found {type(found).__name__}")


def _reward(verdict: Verdict, harness_error: str, index: int | None = None) -> float | None:
    """``index``: the sample's position in the caller's batch, when it was judged in a group of it."""
    reward = verdict.reward
    if reward is not None:
        return reward
    if harness_error == "raise":
        raise RewardUnavailable(f"sample {verdict.index if index is None else index} ({verdict.task_id}): no reward: "
                                f"{verdict.status.value}: "
                                f"{verdict.detail}")
    return math.nan if harness_error == "nan" else None


def _policy(harness_error: str) -> str:
    if harness_error not in HARNESS_ERROR:
        raise VerifierError(f"rewards: harness_error: expected one of {', '.join(HARNESS_ERROR)}, "
                            f"found {harness_error!r}")
    return harness_error


def _holds_tests(truth: Any, read: dict[str, bool]) -> bool:
    """``holds_tests``, a text asked once per batch (a group's rows share their ground truth's text)."""
    if not isinstance(truth, str):
        return holds_tests(truth)
    if truth not in read:
        read[truth] = holds_tests(truth)
    return read[truth]


def _task_id(ground_truth: Any, extra_info: Any, index: int) -> Any:
    """verl's ground truth names the task: its id, or a mapping (or JSON object) with ``task_id``; else
    ``extra_info["task_id"]``."""
    if isinstance(ground_truth, str) and ground_truth.lstrip().startswith("{"):
        try:
            ground_truth = json.loads(ground_truth)
        except (ValueError, RecursionError):  # (not JSON, or nested past the parser's depth: named below)
            pass
    if isinstance(ground_truth, Mapping):
        ground_truth = ground_truth.get("task_id")
    if not ground_truth and isinstance(extra_info, Mapping):
        ground_truth = extra_info.get("task_id")
    if not isinstance(ground_truth, str):
        raise VerifierError(f"sample {index}: ground_truth: expected the task id (or a mapping with task_id), "
                            f"found {type(ground_truth).__name__}")
    return ground_truth


def _options(options: Mapping[str, object]) -> dict[str, object]:
    """Our options among a call's keywords: what the trainer adds on its own (TRAINER_KEYWORDS) left out."""
    return {key: value for key, value in options.items() if key not in TRAINER_KEYWORDS}


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
    options = _options(options)
    data_sources, solution_strs = _listed("data_sources", data_sources), _listed("solution_strs", solution_strs)
    ground_truths = _listed("ground_truths", ground_truths)
    _same_length("data sources", data_sources, "solution strings", solution_strs)
    _same_length("ground truths", ground_truths, "solution strings", solution_strs)
    extras = _listed("extra_infos", extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    _same_length("extra infos", extras, "solution strings", solution_strs)
    # A ground truth that holds tests (verl's prime_code, DeepCoder) is judged as its own problem, whatever the
    # data source names; any other names a task of the data source's dataset.
    read: dict[str, bool] = {}
    sources = [GROUND_TRUTH if _holds_tests(truth, read) else _dataset_name(source)
               for truth, source in zip(ground_truths, data_sources, strict=True)]
    task_ids = [truth if source == GROUND_TRUTH else _task_id(truth, extra, index)
                for index, (truth, extra, source) in enumerate(zip(ground_truths, extras, sources, strict=True))]
    rewards: list[float] = [math.nan] * len(solution_strs)
    for source in sorted(set(sources)):  # each dataset in its own Verifier
        where = [i for i, each in enumerate(sources) if each == source]
        verdicts = _judged(source, [task_ids[i] for i in where], [solution_strs[i] for i in where], options, where)
        for i, verdict in zip(where, verdicts, strict=True):
            reward = _reward(verdict, policy, i)
            rewards[i] = math.nan if reward is None else reward
    return rewards


# -- TRL
TRLReward = Callable[..., "list[float | None]"]
AsyncTRLReward = Callable[..., "Awaitable[list[float | None]]"]


@overload
def trl_reward(dataset: str = ..., *, column: str = ..., harness_error: str = ..., asynchronous: Literal[False] = ...,
               **options: Any) -> TRLReward: ...
@overload
def trl_reward(dataset: str = ..., *, column: str = ..., harness_error: str = ..., asynchronous: Literal[True],
               **options: Any) -> AsyncTRLReward: ...
def trl_reward(dataset: str = "humaneval", *, column: str = "task_id", harness_error: str = "none",
               asynchronous: bool = False, **options: Any) -> TRLReward | AsyncTRLReward:
    """A ``reward_funcs`` entry for TRL's trainers (GRPO, RLOO...): called as ``f(prompts=..., completions=...,
    completion_ids=..., trainer_state=..., log_extra=..., log_metric=..., **columns)``, where the dataset's
    ``column`` holds each prompt's task id; the other keywords are ignored. Completions may be text or
    conversations (the last assistant message's content is the answer; a content of parts, or None, is taken as
    ``answer_text`` says). A sample the harness could not judge is None by default, which TRL leaves out.

    ``asynchronous=True``: an ``async def`` function (``averify``), which TRL awaits on its own event loop beside
    its other asynchronous reward functions rather than calling it in turn."""
    policy = _policy(harness_error)
    name = _dataset_name(dataset)
    _checked_options(options)
    if not isinstance(asynchronous, bool):
        raise VerifierError(f"rewards: asynchronous: expected True or False, found {asynchronous!r}")

    def task_ids(columns: Mapping[str, Any]) -> list[Any]:
        if column not in columns:
            raise VerifierError(f"rewards: expected the dataset's {column!r} column (the task ids) among the "
                                f"reward function's arguments, found {', '.join(sorted(columns)) or 'none'}")
        return _listed(column, columns[column])

    def reward(completions: Sequence[Any], **columns: Any) -> list[float | None]:
        verdicts = judge_answers(dataset, task_ids(columns), _listed("completions", completions), **options)
        return [_reward(v, policy) for v in verdicts]

    async def areward(completions: Sequence[Any], **columns: Any) -> list[float | None]:
        verdicts = await _ajudge_answers(dataset, task_ids(columns), _listed("completions", completions), **options)
        return [_reward(v, policy) for v in verdicts]

    made: TRLReward | AsyncTRLReward = areward if asynchronous else reward
    made.__name__ = f"humaneval_{name.replace('-', '_').replace('/', '_')}"  # TRL logs rewards by name
    return made


# -- OpenRLHF
def openrlhf_reward(dataset: str = "humaneval", *, harness_error: str = "raise",
                    **options: Any) -> Callable[..., OpenRLHFRewards]:
    """OpenRLHF's ``reward_func(queries, prompts, labels, **kwargs)`` (further keywords ignored): ``queries`` are
    prompt + response, decoded with special tokens kept, ``labels`` the task ids (``--label_key``). Returns
    ``{"rewards", "scores", "extra_logs"}`` (torch tensors when torch is there, as OpenRLHF expects; lists
    otherwise)."""
    policy = _policy(harness_error)
    _dataset_name(dataset)
    _checked_options(options)

    def reward_func(queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any],
                    **_trainer: Any) -> OpenRLHFRewards:
        queries, prompts, labels = _listed("queries", queries), _listed("prompts", prompts), _listed("labels", labels)
        _same_length("queries", queries, "prompts", prompts)
        _same_length("labels", labels, "queries", queries)
        answers = [_response(query, prompt) for query, prompt in zip(queries, prompts, strict=True)]
        truths = _dataset_name(dataset) == GROUND_TRUTH
        verdicts = judge_answers(dataset, [label if truths else _task_id(label, None, i)
                                           for i, label in enumerate(labels)], answers, **options)
        rewards = [_reward(v, policy) for v in verdicts]
        values = [math.nan if r is None else r for r in rewards]
        return {"rewards": _tensor(values), "scores": _tensor(values),
                "extra_logs": {"humaneval_passed": _tensor([float(v.passed) for v in verdicts])}}

    return reward_func


def _response(query: Any, prompt: Any) -> Any:
    """The response in an OpenRLHF query: after its prompt; where the query does not start with it (a
    re-tokenised prompt, a doubled BOS, padding), after the query's last assistant header, so that an end of turn
    inside the prompt's own turns does not cut the response away."""
    if not isinstance(query, str) or not isinstance(prompt, str):
        return query
    if query.startswith(prompt):
        return query[len(prompt):]
    at = max((found + len(header) for header in TURN_HEADERS if (found := query.rfind(header)) >= 0), default=0)
    return query[at:]


def _tensor(values: Iterable[float]) -> Any:
    try:
        torch = importlib.import_module("torch")  # not a dependency: OpenRLHF's processes have it
    except ImportError:
        return list(values)
    return torch.tensor(list(values), dtype=torch.float32)
