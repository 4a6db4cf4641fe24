"""HumanEval problems: loading (bundled or custom JSONL/JSONL.gz), validation, selection, digest and label."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Iterator

__all__ = ["BUNDLED_NAME", "DatasetError", "Problem", "Selection", "bundled_path", "load_problems",
           "natural_key", "read_jsonl", "select"]

BUNDLED_NAME = "openai_humaneval"
BUNDLED_FILE = "HumanEval.jsonl.gz"
REQUIRED = ("task_id", "prompt", "entry_point", "test")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
LABEL_BODY_MAX = 80


class DatasetError(ValueError):
    """A bad dataset, samples or fixture file; the message names the file and line."""


@dataclass(frozen=True)
class Problem:
    task_id: str
    prompt: str
    entry_point: str
    test: str
    canonical_solution: str | None = None


@dataclass(frozen=True)
class Selection:
    """The problems a run measures, with what identifies them."""

    name: str
    problems: tuple[Problem, ...]
    total: int  # problems in the dataset before selection
    digest: str
    label: str

    @property
    def full(self) -> bool:
        return len(self.problems) == self.total


def bundled_path() -> Path:
    return Path(str(resources.files("pytest_humaneval.fixtures").joinpath(BUNDLED_FILE)))


def read_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) for each non-blank line; DatasetError names the file and line."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    yield number, json.loads(line)
                except ValueError as exc:
                    raise DatasetError(f"{path}:{number}: expected a JSON object, found invalid JSON ({exc})") \
                        from exc
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read: {exc}") from exc


def natural_key(task_id: str) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", task_id))


def load_problems(path: Path | None = None) -> tuple[str, list[Problem]]:
    """(dataset name, problems in natural task-id order) from ``path`` or the bundled HumanEval."""
    source = path or bundled_path()
    problems: dict[str, Problem] = {}
    for number, row in read_jsonl(source):
        where = f"{source}:{number}"
        if not isinstance(row, dict):
            raise DatasetError(f"{where}: expected a JSON object, found {type(row).__name__}")
        for key in REQUIRED:
            if not isinstance(row.get(key), str) or (key != "prompt" and not row[key].strip()):
                found = "nothing" if key not in row else repr(row[key])[:40]
                raise DatasetError(f"{where}: {key}: expected a non-empty string, found {found}")
        if not _IDENTIFIER.match(row["entry_point"]):
            raise DatasetError(f"{where}: entry_point: expected a Python identifier, found {row['entry_point']!r}")
        if "def check(" not in row["test"]:
            raise DatasetError(f"{where}: test: expected code defining check(candidate), found none")
        solution = row.get("canonical_solution")
        if solution is not None and not isinstance(solution, str):
            raise DatasetError(f"{where}: canonical_solution: expected a string, found {type(solution).__name__}")
        if row["task_id"] in problems:
            raise DatasetError(f"{where}: task_id: expected each task_id once, found {row['task_id']!r} again")
        problems[row["task_id"]] = Problem(row["task_id"], row["prompt"], row["entry_point"], row["test"],
                                           solution)
    if not problems:
        raise DatasetError(f"{source}: expected at least one problem, found none")
    name = BUNDLED_NAME if path is None else source.name.split(".")[0]
    return name, sorted(problems.values(), key=lambda p: natural_key(p.task_id))


def select(name: str, problems: list[Problem], total: int, settings: dict[str, Any]) -> Selection:
    """Freeze the selected problems with a digest over them and the settings that change what is measured."""
    digest = hashlib.sha256()
    digest.update(json.dumps(settings, sort_keys=True).encode())
    for problem in problems:
        digest.update(json.dumps([problem.task_id, problem.prompt, problem.entry_point, problem.test]).encode())
    kind = "full" if len(problems) == total else "sample"
    label = f"{name} {kind} ({', '.join([f'{len(problems)}/{total} problems', *_label_notes(settings)])})"
    return Selection(name, tuple(problems), total, "sha256:" + digest.hexdigest(), label)


def _label_notes(settings: dict[str, Any]) -> list[str]:
    """What makes a run incomparable with a plain one, said where people look: the label."""
    generation = settings.get("generation") or {}
    notes = ["retried generation"] if settings.get("retry") else []
    if generation.get("system_prompt") is not None:
        notes.append("own system prompt" if generation["system_prompt"] else "no system prompt")
    if generation.get("extra_body"):
        body = json.dumps(generation["extra_body"], sort_keys=True, separators=(",", ":"))
        notes.append("extra_body " + (body if len(body) <= LABEL_BODY_MAX else body[:LABEL_BODY_MAX - 3] + "..."))
    return notes
