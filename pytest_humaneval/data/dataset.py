"""HumanEval problems: loading (bundled or custom JSONL/JSONL.gz), validation, selection, digest and label.

Two row formats: HumanEval's (``test`` defines ``check(candidate)``) and EvalPlus's (HumanEval+ and MBPP+:
``base_input`` and ``plus_input`` argument lists, ``atol``; its expected outputs come from running
``canonical_solution``, see ``plus.py``). A file is one or the other, decided by its first row. An EvalPlus file
whose task ids are all ``Mbpp/<n>`` is MBPP+: its inputs are rebuilt as EvalPlus rebuilds them (``mbpp.py``).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from . import mbpp
from .io_shapes import io_shape, not_judged_yet

__all__ = ["BUNDLED_NAME", "DatasetError", "IORowsFound", "LoadedDataset", "Problem", "Selection", "array_hint",
           "bundled_path", "load_dataset", "load_problems", "natural_key", "read_jsonl", "select"]

BUNDLED_NAME = "openai_humaneval"
BUNDLED_FILE = "HumanEval.jsonl.gz"
REQUIRED = ("task_id", "prompt", "entry_point", "test")
# EvalPlus rows: no `test` needed (HumanEval+ Mini has none), but the canonical solution makes the expected outputs.
EVALPLUS_REQUIRED = ("task_id", "prompt", "entry_point", "canonical_solution")
EVALPLUS_KEYS = ("base_input", "plus_input")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
LABEL_BODY_MAX = 80
PLUS_DEFAULT_LIMITS = (4.0, 4.0)  # EvalPlus master's min_time_limit_s and time_limit_factor (config.PlusParams)


class DatasetError(ValueError):
    """A bad dataset, samples or fixture file; the message names the file and line."""


class IORowsFound(DatasetError):
    """A file of standard-input or functional problems, which ``io_problems.load_io_dataset`` reads."""

    def __init__(self, message: str, shape: str) -> None:
        super().__init__(message)
        self.shape = shape


@dataclass(frozen=True)
class Problem:
    task_id: str
    prompt: str
    entry_point: str
    test: str
    canonical_solution: str | None = None
    # EvalPlus rows only: the argument lists of the base and plus suites, as loaded from JSON, and the task's
    # absolute tolerance. None for HumanEval rows, which are judged by their `test`.
    base_input: tuple[Any, ...] | None = None
    plus_input: tuple[Any, ...] | None = None
    atol: float = 0.0
    # Impossible-HumanEval rows only (data/impossible.py): HumanEval's own test, beside the mutated ``test``, and
    # the mutation (``oneoff`` or ``conflicting``). The judge runs both (engine/impossible.py).
    original_test: str | None = None
    impossible_type: str | None = None
    # Standard-input problems (data/io_problems.py, issue 52): the rule that compares a test's output in the judge
    # ("lcb"), with ``test`` the JSON of the [input, expected output] pairs and ``io_tests`` their number; a whole
    # program is judged (no prompt before it, no entry point).
    io: str | None = None
    io_tests: int = 0
    # Functional problems (LeetCode's ``class Solution``, APPS's call-based ones): the method (or function) each test
    # calls with its arguments; ``test`` checks the answers in the judge, and the program is judged whole
    # (``io_tests``: its tests, each call limited to timeout_s on its own).
    call: str | None = None
    # Where the problem came from, for the summary's breakdowns: LiveCodeBench's platform, difficulty, contest date.
    platform: str | None = None
    difficulty: str | None = None
    contest_date: str | None = None
    # Standard-input and functional problems: what a live model reads (LiveCodeBench's prompt,
    # completions/lcb.py): the problem's text and its starter code ("" when none). Never the tests, and never put
    # before the program the candidate runs. None for HumanEval-shaped problems, whose ``prompt`` is sent.
    statement: str | None = None
    starter_code: str = ""

    @property
    def evalplus(self) -> bool:
        return self.base_input is not None


@dataclass(frozen=True)
class Selection:
    """The problems a run measures, with what identifies them."""

    name: str
    problems: tuple[Problem, ...]
    total: int  # problems in the dataset before selection
    digest: str
    label: str
    # What the digest covers besides the problems (timeout, limits, generation settings...), as it was hashed:
    # the report records it, so a refused baseline can say which setting differs.
    settings: dict[str, object] = field(default_factory=dict, compare=False, hash=False)
    # The problems of the dataset (of its first params.limit) that a samples file lacks, scored as a subset on
    # purpose (target.allow_subset): the label says ``subset``.
    missing: tuple[str, ...] = ()

    @property
    def full(self) -> bool:
        return len(self.problems) == self.total


def bundled_path() -> Path:
    return Path(str(resources.files("pytest_humaneval.fixtures").joinpath(BUNDLED_FILE)))


def read_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) for each non-blank line; DatasetError names the file and line."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            for number, raw in enumerate(handle, 1):  # lines end at "\n" only, as in _parse_lines
                line = _utf8(path, number, raw)
                if not line.strip():
                    continue
                try:
                    yield number, json.loads(line)
                except ValueError as exc:
                    raise DatasetError(_not_json(path, number, line, exc)) from exc
    except (OSError, EOFError) as exc:
        raise DatasetError(f"{path}: cannot read: {exc}") from exc


def _utf8(path: Path, number: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, number, raw[exc.start], exc.start) from exc


def _not_utf8(path: Path, number: int, byte: int, offset: int) -> DatasetError:
    return DatasetError(f"{path}:{number}: expected UTF-8 text, found byte 0x{byte:02x} at column {offset + 1}")


def natural_key(task_id: str) -> tuple[Any, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", task_id))


@dataclass(frozen=True)
class LoadedDataset:
    """A dataset file as loaded: its problems, and what identifies its content."""

    name: str
    problems: list[Problem]  # natural task-id order
    sha256: str  # of the content (decompressed for .gz): the same dataset has one, however it is packed
    file_sha256: str  # of the file's bytes as they are
    evalplus: bool
    outside: frozenset[str] = frozenset()  # the task ids a contest-date window left out (their samples: passed over)


def load_problems(path: Path | None = None) -> tuple[str, list[Problem]]:
    """(dataset name, problems in natural task-id order) from ``path`` or the bundled HumanEval."""
    loaded = load_dataset(path)
    return loaded.name, loaded.problems


def load_dataset(path: Path | None = None) -> LoadedDataset:
    """The dataset at ``path`` (or the bundled HumanEval), validated row by row; DatasetError names file and line."""
    source = path or bundled_path()
    data = _read_bytes(source)
    content = data
    if source.name.endswith(".gz"):
        try:
            content = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise DatasetError(f"{source}: cannot read: {exc}") from exc
    problems: dict[str, Problem] = {}
    where_of: dict[str, str] = {}
    evalplus: bool | None = None
    for number, row in _parse_lines(source, content):
        where = f"{source}:{number}"
        if not isinstance(row, dict):
            raise DatasetError(f"{where}: expected a JSON object, found {type(row).__name__}{array_hint(row)}")
        if evalplus is None:
            shape = io_shape(row)
            if shape is not None:
                raise IORowsFound(not_judged_yet(where, shape), shape)
            evalplus = any(key in row for key in EVALPLUS_KEYS)
        problem = _evalplus_problem(where, row) if evalplus else _humaneval_problem(where, row)
        if problem.task_id in problems:
            raise DatasetError(f"{where}: task_id: expected each task_id once, found {problem.task_id!r} again")
        problems[problem.task_id] = problem
        where_of[problem.task_id] = where
    if not problems:
        raise DatasetError(f"{source}: expected at least one problem, found none")
    if evalplus and mbpp.is_mbpp(list(problems)):  # EvalPlus's MBPP+: inputs JSON could not hold, rebuilt
        problems = {task: _rebuilt(where_of[task], problem) for task, problem in problems.items()}
    name = BUNDLED_NAME if path is None else source.name.split(".")[0]
    return LoadedDataset(name, sorted(problems.values(), key=lambda p: natural_key(p.task_id)),
                         hashlib.sha256(content).hexdigest(), hashlib.sha256(data).hexdigest(), bool(evalplus))


def _rebuilt(where: str, problem: Problem) -> Problem:
    """An MBPP+ problem with its inputs as EvalPlus judges them (``mbpp.py``); an input that does not have the
    shape its task's rule expects is one error naming the row."""
    try:
        return replace(problem, base_input=mbpp.rebuild_inputs(problem.task_id, problem.base_input or ()),
                       plus_input=mbpp.rebuild_inputs(problem.task_id, problem.plus_input or ()))
    except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
        raise DatasetError(f"{where}: {problem.task_id}: expected inputs shaped as EvalPlus rebuilds this MBPP+ "
                           f"task's (tuples, sets, complex numbers), found one it cannot rebuild: "
                           f"{type(exc).__name__}: {exc}") from exc


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read: {exc}") from exc


def _parse_lines(source: Path, content: bytes) -> Iterator[tuple[int, Any]]:
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = content.rfind(b"\n", 0, exc.start) + 1
        raise _not_utf8(source, content.count(b"\n", 0, exc.start) + 1, content[exc.start],
                        exc.start - line_start) from exc
    # Lines as a text file has them ("\n"), not str.splitlines(), which also splits at U+2028 inside strings.
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as exc:
            raise DatasetError(_not_json(source, number, line, exc)) from exc


def array_hint(row: Any) -> str:
    """What to add to "found list" when the list is a JSON array of the file's rows (one line of json.dump)."""
    if isinstance(row, list) and row and all(isinstance(item, dict) for item in row):
        return (f" of {len(row)} objects: a JSON array on one line; expected one JSON object per line (JSONL): "
                "write each row on a line of its own")
    return ""


def _not_json(source: Path, number: int, line: str, exc: ValueError) -> str:
    """The one-line error for a line that is not JSON, saying what JSONL is where the file looks like a JSON
    document spread over lines (an array, or an indented object)."""
    expected = "one JSON object per line (JSONL)"
    head = line.strip()[:1]
    if number == 1 and head in ("[", "{"):
        kind = "a JSON array" if head == "[" else "a JSON object spread over several lines"
        return (f"{source}:{number}: expected {expected}, found what looks like {kind}; write each row on a line "
                f"of its own (for a JSON array: python -c \"import json,sys; [print(json.dumps(r)) for r in "
                f"json.load(sys.stdin)]\" < FILE.json > FILE.jsonl)")
    return f"{source}:{number}: expected {expected}, found invalid JSON ({exc})"


def _strings(where: str, row: dict[str, Any], keys: tuple[str, ...]) -> None:
    for key in keys:
        if not isinstance(row.get(key), str) or (key != "prompt" and not row[key].strip()):
            found = "nothing" if key not in row else repr(row[key])[:40]
            raise DatasetError(f"{where}: {key}: expected a non-empty string, found {found}")
    if not _IDENTIFIER.match(row["entry_point"]):
        raise DatasetError(f"{where}: entry_point: expected a Python identifier, found {row['entry_point']!r}")


IMPOSSIBLE_TYPES = ("oneoff", "conflicting")  # the values of impossible_type (ImpossibleBench's split names)


def _humaneval_problem(where: str, row: dict[str, Any]) -> Problem:
    if any(key in row for key in EVALPLUS_KEYS):
        raise DatasetError(f"{where}: expected a HumanEval row like the file's first (no base_input/plus_input), "
                           f"found an EvalPlus row")
    _strings(where, row, REQUIRED)
    if "def check(" not in row["test"]:
        raise DatasetError(f"{where}: test: expected code defining check(candidate), found none")
    solution = row.get("canonical_solution")
    if solution is not None and not isinstance(solution, str):
        raise DatasetError(f"{where}: canonical_solution: expected a string, found {type(solution).__name__}")
    original, kind = row.get("original_test"), row.get("impossible_type")
    if original is not None and (not isinstance(original, str) or "def check(" not in original):
        raise DatasetError(f"{where}: original_test: expected code defining check(candidate), found "
                           f"{repr(original)[:40]}")
    if original is not None and kind not in IMPOSSIBLE_TYPES:
        raise DatasetError(f"{where}: impossible_type: expected one of {', '.join(IMPOSSIBLE_TYPES)} beside "
                           f"original_test, found {json.dumps(kind)[:40]}")
    return Problem(row["task_id"], row["prompt"], row["entry_point"], row["test"], solution,
                   original_test=original, impossible_type=kind if original is not None else None)


def _evalplus_problem(where: str, row: dict[str, Any]) -> Problem:
    """An EvalPlus row: judged by its inputs and the canonical solution's outputs, so `test` is optional."""
    missing = [key for key in EVALPLUS_KEYS if key not in row]
    if missing:
        raise DatasetError(f"{where}: {missing[0]}: expected an EvalPlus row like the file's first (base_input "
                           f"and plus_input), found nothing")
    _strings(where, row, EVALPLUS_REQUIRED)
    test = row.get("test", "")
    if not isinstance(test, str):
        raise DatasetError(f"{where}: test: expected a string (or no test), found {type(test).__name__}")
    inputs = {}
    for key in EVALPLUS_KEYS:
        value = row[key]
        if value == {}:  # MBPP+ v0.2.0's Mbpp/793 has no plus inputs, written as {}: EvalPlus iterates it as empty
            value = []
        if not isinstance(value, list) or not all(isinstance(args, list) for args in value):
            raise DatasetError(f"{where}: {key}: expected a list of argument lists, found "
                               f"{json.dumps(value)[:40]}")
        inputs[key] = tuple(value)
    atol = row.get("atol", 0)
    if isinstance(atol, bool) or not isinstance(atol, (int, float)) or not 0 <= atol < float("inf"):
        raise DatasetError(f"{where}: atol: expected a number >= 0, found {json.dumps(atol)[:40]}")
    return Problem(row["task_id"], row["prompt"], row["entry_point"], test, row["canonical_solution"],
                   inputs["base_input"], inputs["plus_input"], float(atol))


def select(name: str, problems: list[Problem], total: int, settings: dict[str, object],
           release: str | None = None, missing: tuple[str, ...] = ()) -> Selection:
    """Freeze the selected problems with a digest over them and the settings that change what is measured.
    ``release`` (a known release's version) goes into the label after the name; ``missing``: the problems a
    samples file lacks (its kind is then ``subset``)."""
    digest = hashlib.sha256()
    digest.update(json.dumps(settings, sort_keys=True).encode())
    for problem in problems:
        digest.update(json.dumps([problem.task_id, problem.prompt, problem.entry_point, problem.test]).encode())
    kind = "subset" if missing else "full" if len(problems) == total else "sample"
    shown = f"{name} {release}" if release else name
    label = f"{shown} {kind} ({', '.join([f'{len(problems)}/{total} problems', *_label_notes(settings)])})"
    return Selection(name, tuple(problems), total, "sha256:" + digest.hexdigest(), label, settings, missing)


def _label_notes(settings: Mapping[str, object]) -> list[str]:
    """What makes a run incomparable with a plain one, said where people look: the label."""
    generation = _section(settings, "generation")
    notes = ["retried generation"] if settings.get("retry") else []
    evalplus = _section(settings, "evalplus")
    if evalplus and (evalplus["min_time_limit_s"], evalplus["time_limit_factor"]) != PLUS_DEFAULT_LIMITS:
        notes.append(f"time limits max({evalplus['min_time_limit_s']:g} s, {evalplus['time_limit_factor']:g} x "
                     "canonical)")
    if settings.get("compare"):
        notes.append(f"compared by {settings['compare']}")
    window = _section(settings, "window")
    if window:
        notes.append(f"contest dates {window.get('start_date') or '...'} to {window.get('end_date') or '...'}")
    if settings.get("impossible_instruction"):
        notes.append(f"instruction {settings['impossible_instruction']}")
    if generation.get("system_prompt") is not None:
        notes.append("own system prompt" if generation["system_prompt"] else "no system prompt")
    if generation.get("extra_body"):
        body = json.dumps(generation["extra_body"], sort_keys=True, separators=(",", ":"))
        notes.append("extra_body " + (body if len(body) <= LABEL_BODY_MAX else body[:LABEL_BODY_MAX - 3] + "..."))
    return notes


def _section(settings: Mapping[str, object], name: str) -> Mapping[str, Any]:
    """One of the settings' sections (the generation's, EvalPlus's limits), empty when the run has none."""
    found = settings.get(name)
    return found if isinstance(found, Mapping) else {}
