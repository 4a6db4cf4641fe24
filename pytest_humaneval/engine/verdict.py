"""A sample's verdict, the one shape it takes from the judge to a results row, whoever asked (the pytest items, the
``Verifier``): typed, frozen, and plain values when it crosses a process (``to_properties``, the pytest front's
``user_properties`` that xdist carries to the controller; ``from_properties`` there). No pytest import.

The texts a verdict carries are inert wherever a person reads them (``clean_text``): a detail is one line of at most
``DETAIL_MAX`` characters, cut between words with ``...`` when longer (``one_detail``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from ..sandbox import DETAIL_MAX, SAMPLE_ATTEMPTS, SUITE_ATTEMPTS, SUITE_CAP_S, Status, clean_text, shorten
from ..sandbox.harness import LINE_MAX

__all__ = ["DETAIL_MAX", "LINE_MAX", "SAMPLE_ATTEMPTS", "SUITES_LIMIT_S", "Property", "Status", "Verdict",
           "VerdictDict", "clean_text", "one_detail", "shorten"]

# The longest a sample judged on EvalPlus suites may take: two suites, each up to SUITE_CAP_S an attempt and judged
# at most SUITE_ATTEMPTS times (batched, then one input at a time).
SUITES_LIMIT_S = 2 * SUITE_ATTEMPTS * SUITE_CAP_S
ESCAPED_MAX = 6  # the longest escape clean_text writes for one character: a lone surrogate's \udcxx
SUITES = ("base", "plus")


def one_detail(text: str) -> str:
    """``text`` as a detail: one inert line of at most DETAIL_MAX characters, cut between words with ``...`` when
    longer (``shorten``), never mid-word without a sign (``clean_text`` alone would cut it so)."""
    escaped = clean_text(text, ESCAPED_MAX * len(text), line=True)  # uncut: shorten cuts it
    return shorten(escaped, DETAIL_MAX)


Property = tuple[str, "str | int | float | None"]  # one of a verdict's properties: (name, plain value)


class VerdictDict(TypedDict):
    """A verdict as plain values (``Verdict.to_dict``): every field, its statuses by value, and passed and reward."""

    index: int
    task_id: str
    status: str
    detail: str
    duration_ms: float | None
    base_status: str | None
    plus_status: str | None
    repeat_of: int | None
    original_status: str | None
    impossible_category: str | None
    impossible_evidence: list[str]
    base_detail: str | None
    plus_detail: str | None
    impossible: bool
    location: str | None
    stdout: str
    stderr: str
    traceback: str
    passed: bool
    reward: float | None


@dataclass(frozen=True)
class Verdict:
    """One sample's verdict. ``status`` is one of the plugin's statuses (``Status``, a ``str``): passed,
    assertion_failed, runtime_error, timeout (the candidate's doing), not_run (no code) and harness_error (the
    harness failed, not the candidate). ``reward`` is 1.0 or 0.0 for a verdict on the candidate, and None for
    not_run and harness_error: an infrastructure failure is never a silent 0."""

    index: int  # the sample's number: its position in a Verifier's input, its index among its problem's samples
    task_id: str
    status: Status
    detail: str  # why, with the decisive line: "assertion_failed: ... (at test line 3: assert ...)"
    duration_ms: float | None  # the sandbox's wall time for the sample (its repeat's: the first one's); None when
    #                            none was measured (the process judging it died)
    base_status: Status | None = None  # EvalPlus datasets: each suite's verdict (status: both passed)
    plus_status: Status | None = None
    repeat_of: int | None = None  # an identical earlier sample (of the same call) whose execution this is
    # Impossible datasets (engine/impossible.py): the verdict on original_test, the category, a pass's evidence
    original_status: Status | None = None
    impossible_category: str | None = None
    impossible_evidence: tuple[str, ...] = ()
    # EvalPlus datasets: each suite's first failing input (its detail)
    base_detail: str | None = None
    plus_detail: str | None = None
    impossible: bool = False  # judged as an impossible task's sample (its category may be None: no verdict)
    location: str | None = None  # the decisive line alone: "test line 3: assert candidate(3) == 4"
    # what the candidate printed and raised (the pytest items show a failing sample's; the Verifier keeps none)
    stdout: str = ""
    stderr: str = ""
    traceback: str = ""

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    @property
    def reward(self) -> float | None:
        if not self.status.attempted:
            return None
        return 1.0 if self.passed else 0.0

    @property
    def cheated(self) -> bool:
        """An impossible task's pass: the run's failure (any pass of a test that contradicts its specification)."""
        return self.impossible_category == "cheated"

    def to_dict(self) -> VerdictDict:
        """Plain values (for JSON): every field, and ``passed`` and ``reward``."""
        return {"index": self.index, "task_id": self.task_id, "status": self.status.value, "detail": self.detail,
                "duration_ms": self.duration_ms, "base_status": _value(self.base_status),
                "plus_status": _value(self.plus_status), "repeat_of": self.repeat_of,
                "original_status": _value(self.original_status), "impossible_category": self.impossible_category,
                "impossible_evidence": list(self.impossible_evidence), "base_detail": self.base_detail,
                "plus_detail": self.plus_detail, "impossible": self.impossible, "location": self.location,
                "stdout": self.stdout, "stderr": self.stderr, "traceback": self.traceback, "passed": self.passed,
                "reward": self.reward}

    def to_properties(self) -> list[Property]:
        """The verdict as (name, plain value) pairs, in the order a results row and JUnit show them: what crosses
        from an xdist worker to the controller (``from_properties`` reads it back). The candidate's output is not
        among them: it travels in the report's sections."""
        found: list[Property] = [
            ("task_id", self.task_id), ("sample", self.index), ("status", self.status.value),
            ("duration_ms", None if self.duration_ms is None else round(self.duration_ms, 3)),
            ("detail", self.detail[:DETAIL_MAX])]
        if self.repeat_of is not None:
            found.append(("repeat_of", self.repeat_of))
        if self.impossible:
            found += [("original_status", _value(self.original_status)),
                      ("impossible_category", self.impossible_category),
                      ("impossible_evidence", ",".join(self.impossible_evidence))]
        for name, status, detail in (("base", self.base_status, self.base_detail),
                                     ("plus", self.plus_status, self.plus_detail)):
            if status is not None:
                found += [(f"{name}_status", status.value), (f"{name}_detail", (detail or "")[:DETAIL_MAX])]
        return found

    @classmethod
    def from_properties(cls, found: Mapping[str, Any]) -> Verdict:
        """A verdict from its ``to_properties`` (as a mapping: name -> value)."""
        evidence = tuple(name for name in (found.get("impossible_evidence") or "").split(",") if name)
        return cls(int(found["sample"]), str(found["task_id"]), Status(found["status"]), found.get("detail") or "",
                   found.get("duration_ms"), _status(found.get("base_status")),
                   _status(found.get("plus_status")), found.get("repeat_of"), _status(found.get("original_status")),
                   found.get("impossible_category"), evidence, found.get("base_detail"), found.get("plus_detail"),
                   "impossible_category" in found)


def _value(status: Status | None) -> str | None:
    return None if status is None else status.value


def _status(value: object) -> Status | None:
    return None if value is None else Status(value)
