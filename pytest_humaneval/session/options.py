"""What the command line and the ini file ask of a benchmark session, read and checked before anything runs: the
config's path (or a samples file named by ``--humaneval-set``), whether the session collects the benchmark, the
gate's options, the outputs' paths, xdist's hosts, a runtime endpoint's key and URL, the extraction hooks."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from ..completions.extract import Extraction, extract, from_code, split_reasoning
from ..config import ConfigError, Gate, RunConfig, config_from_sets
from ..outputs.paths import OutputError, busy_error, check_output, same_file
from . import outcomes

__all__ = ["OUTPUT_OPTIONS", "check_hosts", "check_outputs", "check_runtime_gates", "config_path", "extractor_of",
           "generations_folder", "left_out_by_paths", "lists_only", "point_collection_at", "samples_of_sets",
           "sets_without_config", "with_gate_options"]

OUTPUT_OPTIONS = ("humaneval_results", "humaneval_report", "humaneval_markdown", "humaneval_html")


def config_path(config: pytest.Config, name: str = "humaneval_config") -> Path | None:
    """The option's path, else the ini key's (relative to the ini file), else None."""
    option = config.getoption(name)
    if option:
        return Path(option).expanduser().resolve()
    ini = config.getini(name)
    if ini:
        base = config.inipath.parent if config.inipath else config.rootpath
        return (base / os.path.expanduser(str(ini))).resolve()
    return None


def sets_without_config(path: Path) -> str:
    """--humaneval-set with the ini key's config left out of the session: it would do nothing (exit 5)."""
    return (f"--humaneval-set: expected the benchmark in this session, found it left out: only the "
            f"humaneval_config ini key names {path}, and pytest was given paths of its own; add the config "
            "among them, or pass --humaneval-config")


def samples_of_sets(config: pytest.Config, sets: Sequence[str]) -> Path:
    """No config file: the samples file --humaneval-set names, which the session collects (as it would a
    config file); a usage error saying what a run without a file needs when it names none."""
    values = [text.partition("=")[2] for text in sets if text.partition("=")[0].strip() == "target.samples"]
    if not values or not values[-1]:
        try:
            config_from_sets(sets, config.invocation_params.dir)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from exc
        raise pytest.UsageError("--humaneval-set: without a config file, expected target.samples=FILE")
    return (config.invocation_params.dir / os.path.expanduser(values[-1])).resolve()


def left_out_by_paths(config: pytest.Config, path: Path) -> bool:
    """Only the ini key names the config, and pytest was given paths of its own (one test file, an IDE's run):
    those tests are the session and the benchmark stays out (the plugin is inert). Naming the config file among
    the paths, or --humaneval-config, adds it; a bare ``pytest`` runs the project's tests and the benchmark."""
    if config.getoption("humaneval_config") or config.args_source != pytest.Config.ArgsSource.ARGS:
        return False
    return all(Path(arg.split("::")[0]).resolve() != path for arg in config.args)


def generations_folder(config: pytest.Config) -> Path | None:
    """Where runtime completions are stored: the option or ini key, else pytest's cache (so --cache-clear
    forgets them and -p no:cacheprovider stores nothing)."""
    folder = config_path(config, "humaneval_generations")
    if folder is not None or getattr(config, "cache", None) is None:
        return folder
    try:
        return config.cache.mkdir("humaneval-generations")
    except OSError as exc:  # a read-only checkout: generate everything, store nothing
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.write_line(f"humaneval: warning: cannot create the generation store in pytest's cache "
                                f"({exc}); completions will not be reused")
        return None


def check_hosts(config: pytest.Config) -> None:
    """What xdist would do with --tx that the benchmark cannot use, said before anything runs."""
    from .hosts import remote_specs  # imports execnet: only with xdist

    tx = config.getoption("tx", None) or []
    if tx and config.getoption("dist", "no") == "no":
        config.issue_config_time_warning(pytest.PytestConfigWarning(
            f"pytest-humaneval: --tx {tx[0]} without --dist (-d) or -n: xdist starts no worker, and every sample "
            "runs in this process; add -d (--dist load) to run them on the --tx hosts"), stacklevel=2)
    remote = remote_specs(config)
    if remote and outcomes.reruns_requested(config):
        raise pytest.UsageError(
            f"--tx {remote[0]}: pytest-rerunfailures cannot rerun on a remote xdist worker (its worker side "
            "connects to the controller at 127.0.0.1, the host's own loopback there), and samples are never "
            "rerun: drop --reruns/--force-reruns and the reruns ini key for this run, or run the workers with "
            "popen (-n, --tx popen//chdir=)")


def check_outputs(config: pytest.Config) -> None:
    """Every output path is writable, before anything runs (not after the last sample); none of them (JUnit's
    file included) is a live session's results file, which writing would cut short; no two name one file."""
    if config.option.collectonly:
        return
    named: list[tuple[str, Path]] = []
    for dest in OUTPUT_OPTIONS:
        value = config.getoption(dest)
        if value:
            option = "--" + dest.replace("_", "-")
            try:
                named.append((option, check_output(option, value)))
            except OutputError as exc:
                raise pytest.UsageError(str(exc)) from exc
    junit = config.getoption("xmlpath", None)
    if junit:
        named.append(("--junitxml", Path(os.path.abspath(os.path.expanduser(os.path.expandvars(junit))))))
    for i, (option, path) in enumerate(named):
        busy = busy_error(option, path)
        if busy:
            raise pytest.UsageError(busy)
        for other, earlier in named[:i]:
            if same_file(path, earlier):
                raise pytest.UsageError(f"{option}: {path} is also the file of {other}: each output needs a file "
                                        "of its own (one would overwrite the other)")


def with_gate_options(config: pytest.Config, run_config: RunConfig) -> RunConfig:
    """--humaneval-baseline and --humaneval-min-pass-at-1 override (or create) the config's gate."""
    baseline, floor = config.getoption("humaneval_baseline"), config.getoption("humaneval_min_pass_at_1")
    allow_partial = config.getoption("humaneval_allow_partial")
    if allow_partial and run_config.gate is None and baseline is None and floor is None:
        raise pytest.UsageError("--humaneval-allow-partial: expected a gate (a gate: section, --humaneval-baseline "
                                "or --humaneval-min-pass-at-1), found none")
    if baseline is None and floor is None and not allow_partial:
        return run_config
    if floor is not None and not 0 <= floor <= 1:
        raise pytest.UsageError(f"--humaneval-min-pass-at-1: expected a number between 0 and 1, found {floor:g}")
    gate = run_config.gate or Gate()
    if baseline is not None:
        gate = dataclasses.replace(gate, baseline=Path(baseline).expanduser().resolve())
    if floor is not None:
        gate = dataclasses.replace(gate, min_pass_at_1=floor)
    if allow_partial:
        gate = dataclasses.replace(gate, allow_partial=True)
    return dataclasses.replace(run_config, gate=gate)


def check_runtime_gates(run_config: RunConfig, key: bool = True) -> None:
    """Before any request: the key's variable is set (never shown) and the URL passes the guard. ``key=False``:
    a session that sends no request (--collect-only) needs no key (a fork's CI has none)."""
    from ..completions import endpoint  # httpx and asyncio: imported by runtime sessions only
    ref = run_config.target.credentials_ref
    if key and ref is not None and not os.environ.get(ref[4:]):
        raise pytest.UsageError(f"{run_config.path}: target.credentials_ref: expected the environment variable "
                                f"{ref[4:]} to be set (the API key is read from it), found it unset or empty")
    try:
        endpoint.check_url(run_config.target.endpoint or "")
    except endpoint.EndpointError as exc:
        raise pytest.UsageError(f"{run_config.path}: target.endpoint: {exc}") from exc


def extractor_of(config: pytest.Config) -> Callable[[str, str, str], Extraction]:
    """The plugin's extraction, or the session's ``pytest_humaneval_extract`` hooks first (hooks.py)."""
    hook = config.hook.pytest_humaneval_extract
    if not hook.get_hookimpls():
        return extract

    def extractor(answer: str, entry_point: str, prompt: str) -> Extraction:
        code = hook(answer=answer, entry_point=entry_point, prompt=prompt)
        if code is None:
            return extract(answer, entry_point, prompt)
        if not isinstance(code, str):
            raise TypeError(f"pytest_humaneval_extract: expected a string (the code) or None, found "
                            f"{type(code).__name__}")
        return from_code(code, entry_point, prompt, split_reasoning(answer)[1],
                         "taken by a pytest_humaneval_extract hook")

    return extractor


def point_collection_at(config: pytest.Config, path: Path, from_option: bool) -> None:
    """``--humaneval-config`` without positional paths: the session is exactly the benchmark. With positional paths,
    or with only the ini key (a project whose own ``pytest`` includes the benchmark), the benchmark joins what
    pytest collects anyway (the paths, ``testpaths``, or the current folder): the project's tests still run."""
    if config.args_source != pytest.Config.ArgsSource.ARGS and from_option:
        config.args = [str(path)]
    elif all(Path(arg.split("::")[0]).resolve() != path for arg in config.args):
        config.args = [*config.args, str(path)]


def lists_only(config: pytest.Config) -> bool:
    """--collect-only, --fixtures, --fixtures-per-test: the session lists what it collected and runs nothing."""
    option = config.option
    return bool(option.collectonly or getattr(option, "showfixtures", False)
                or getattr(option, "show_fixtures_per_test", False))
