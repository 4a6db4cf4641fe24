"""A partial run: pytest's selection (-k, -m, --lf, --deselect, node ids) left out samples of the plan.

Such a run measured something else than the benchmark it was configured for, so its report says so: the label
says how many planned samples ran and what chose them, the digest differs from the whole plan's (a partial
report is never taken for a full one, as a baseline or in ``compare``), and ``dataset.partial`` holds the
counts. The gate fails on it unless the user opted in (``gate.allow_partial``, ``--humaneval-allow-partial``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .schema import PartialSection, Report

__all__ = ["Partial", "mark_partial", "resolve", "selected_by"]

Key = tuple[str, int]


@dataclass(frozen=True)
class Partial:
    selected: int
    planned: int
    by: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.selected}/{self.planned} planned samples selected by {' and '.join(self.by)}"

    def __post_init__(self) -> None:
        object.__setattr__(self, "by", tuple(self.by))  # also when rebuilt from a report's list

    def as_dict(self) -> PartialSection:
        return {"selected": self.selected, "planned": self.planned, "by": list(self.by)}


def selected_by(option: Any, args: Iterable[str], config_path: Path) -> tuple[str, ...]:
    """The pytest options that can leave samples out, as the user wrote them (``option`` is config.option)."""
    causes = [name for name, attr in (("-k", "keyword"), ("-m", "markexpr"), ("--lf", "lf"),
                                      ("--deselect", "deselect"), ("--sw", "stepwise"))
              if getattr(option, attr, None)]
    if any("::" in arg and Path(arg.split("::")[0]).resolve() == config_path for arg in args):
        causes.append("node ids")
    return tuple(causes)


def resolve(plan: list[Key], collected: list[Key] | None, by: tuple[str, ...]) -> tuple[list[Key], Partial | None]:
    """The samples the run planned, and whether it is partial.

    Fewer samples than the plan because the user selected them is a partial run. Fewer for any other reason
    (nothing collected, a collection error, a worker that could not collect) is the whole plan, whose missing
    samples did not run: that is coverage lost, not a smaller benchmark."""
    if collected is not None and len(collected) < len(plan) and by:
        return collected, Partial(len(collected), len(plan), by)
    if collected is None or len(collected) < len(plan):
        return plan, None
    return collected, None


_KIND = re.compile(r"^(?P<name>.*) (?:full|sample|subset) \((?P<problems>\d+)/(?P<total>\d+) problems(?P<notes>.*)\)$")


def mark_partial(report: Report, partial: Partial | None, selected: Iterable[tuple[str, int]]) -> None:
    """Label, digest and ``dataset.partial`` of a report built for the whole plan. The label's kind becomes
    ``partial`` (never ``full``) and counts the problems the selection kept."""
    dataset = report["dataset"]
    dataset["partial"] = None if partial is None else partial.as_dict()
    if partial is None:
        return
    selected = list(selected)
    label = dataset["label"]
    match = _KIND.match(label)
    if match:
        problems = len({task for task, _ in selected})
        dataset["label"] = (f"{match['name']} partial ({problems}/{match['total']} problems{match['notes']}; "
                            f"{partial.describe()})")
    else:
        dataset["label"] = f"{label} (partial: {partial.describe()})"
    keys = json.dumps(sorted(selected))
    dataset["digest"] = "sha256:" + hashlib.sha256(f"{dataset['digest']} {keys}".encode()).hexdigest()
    dataset["full"] = False
