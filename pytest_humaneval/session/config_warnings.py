"""Config-time warnings that point at the user's config file, not at the plugin: the warnings themselves (a seed
that repeats samples, a k a samples file cannot support, raw chat answers, settings no published protocol uses) and
how they are placed.

``config.issue_config_time_warning`` places a warning at a Python frame, so pytest's summary named
``pytest_humaneval/plugin.py:197`` and printed the plugin's own source line for a setting of the user's YAML.
:func:`warn_at` places it at the config file and the line of the key it is about (pytest's summary then shows
that line), honouring the user's ``filterwarnings`` and ``-W`` as pytest's own config-time warnings do.
"""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import pytest

from ..completions.sources import chat_answers
from ..config import RunConfig
from ..engine.report import describe_protocol
from ..plan import Plan

__all__ = ["line_of", "warn_at", "warn_chat_answers", "warn_incomparable", "warn_seeded", "warn_unreportable_k"]


def line_of(path: Path, key: str) -> int:
    """The line of ``key`` (dotted: ``params.protocol``) in the YAML file, by its last part; 1 if not found."""
    name = key.rpartition(".")[2]
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return 1
    pattern = re.compile(rf"(^|[\s{{,]){re.escape(name)}\s*:")
    return next((number for number, line in enumerate(lines, 1) if pattern.search(line)), 1)


def warn_at(config: pytest.Config, text: str, path: Path, key: str) -> None:
    if config.pluginmanager.is_blocked("warnings"):
        return
    line = line_of(path, key)
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always", pytest.PytestConfigWarning)
        ini = config.getini("filterwarnings")
        command_line = getattr(config.known_args_namespace, "pythonwarnings", None) or []
        for spec in [*ini, *command_line]:  # the later one wins, as in pytest
            _apply(spec)
        warnings.warn_explicit(pytest.PytestConfigWarning(text), pytest.PytestConfigWarning, str(path), line,
                               module="pytest_humaneval")
    for record in records:
        config.hook.pytest_warning_recorded.call_historic(kwargs={
            "warning_message": record, "when": "config", "nodeid": "", "location": (str(path), line, key)})


def _apply(spec: str) -> None:
    """One ``action:message:category:module:lineno`` filter (pytest's form), as far as it can be read."""
    parts = [part.strip() for part in spec.split(":")] + [""] * 5
    action, message, category, module, lineno = parts[:5]
    kind: type[Warning] = Warning
    if category:
        where, _, name = category.rpartition(".")
        try:
            found = getattr(importlib.import_module(where or "builtins"), name)
        except (ImportError, AttributeError, ValueError):
            return
        if not (isinstance(found, type) and issubclass(found, Warning)):
            return
        kind = found
    try:
        warnings.filterwarnings(action or "default", message, kind, module,  # type: ignore[arg-type]  # checked
                                int(lineno) if lineno else 0)                  # by warnings itself
    except (ValueError, AssertionError):
        pass


def warn_seeded(config: pytest.Config, run_config: RunConfig) -> None:
    """A fixed seed sent in every request of a problem: samples drawn in separate requests are the same answer."""
    params = run_config.params
    seeded = (params.extra_body or {}).get("seed") is not None
    if seeded and run_config.target.mode == "runtime" and params.request_n is not None and params.request_n < params.n:
        warn_at(config, f"pytest-humaneval: params.extra_body.seed with params.n {params.n} and params.request_n "
                        f"{params.request_n}: every request sends the same seed, so the samples of a problem drawn in "
                        "separate requests repeat one another (a server seeds the choices of one request apart, not "
                        "its requests) and pass@k measures fewer samples than n; leave the seed out, or set "
                        f"params.request_n to {params.n}", run_config.path, "params.extra_body")


def warn_unreportable_k(config: pytest.Config, run_config: RunConfig, plan: Plan) -> None:
    """Samples mode: the file sets n per problem, so a k it cannot support is left out, with a warning."""
    per_task: dict[str, int] = {}
    for sample in plan.samples:
        per_task[sample.task_id] = per_task.get(sample.task_id, 0) + 1
    for k in run_config.params.k:
        short = [task for task, n in per_task.items() if n < k]
        if short:
            warn_at(config, f"pytest-humaneval: pass@{k} will not be reported: {len(short)} problem(s) of "
                            f"{run_config.target.samples} have fewer than {k} samples (e.g. {short[0]})",
                    run_config.path, "params.k")


def warn_chat_answers(config: pytest.Config, run_config: RunConfig, plan: Plan) -> None:
    """Samples mode without target.extract: raw chat answers run as written (and score 0), so say which key
    takes their code out, as runtime mode does."""
    if run_config.target.mode != "samples" or run_config.target.extract:
        return
    found = chat_answers(plan)
    if found is not None:
        count, first = found
        warn_at(config, f"pytest-humaneval: {count} of {len(plan.samples)} samples of {run_config.target.samples} "
                        f"look like raw chat answers (a Markdown code fence, a <think> block or prose where code "
                        f"starts; the first: {first.task_id} sample {first.index}), which run as written and fail "
                        "with SyntaxError: set target.extract: true (or --humaneval-set target.extract=true) to "
                        "take the code out of each answer as runtime mode does", run_config.path, "target.samples")


def warn_incomparable(config: pytest.Config, run_config: RunConfig, plan: Plan) -> None:
    """A pass@k computed under settings no published protocol uses: one warning line each, naming the preset
    that would make it comparable (protocol.pitfalls)."""
    described = describe_protocol(run_config, plan)
    key = next((key for key in ("params.protocol", "params.temperature", "params.n") if
                line_of(run_config.path, key) > 1), "target.mode")
    for warning in described["warnings"] if described else []:
        warn_at(config, f"pytest-humaneval: {warning}", run_config.path, key)
