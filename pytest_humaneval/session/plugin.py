"""pytest hooks only: options, configure -> stash, collection, xdist node config. Everything else is delegated."""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .. import sandbox
from ..completions.extract import Extraction, extract, from_code, split_reasoning
from ..completions.sources import Plan, build_plan, chat_answers
from ..config import ConfigError, Gate, RunConfig, config_from_sets, load_config, with_k
from ..data.dataset import DatasetError
from ..data.plus import Suites
from ..data.releases import NotDownloaded
from ..run import Run
from ..scoring import html_report
from ..scoring.gate import Baseline, BaselineError, check_digest, compared_settings, load_baseline
from ..scoring.outputs import OutputError, busy_error, check_output, same_file
from ..scoring.report import describe_protocol, planned_view
from . import hooks, outcomes, writers
from .ahead import PoolHooks
from .config_warnings import line_of, warn_at
from .handoff import CONFIG_INPUT, PLAN_INPUT, config_from_json
from .items import RUN_KEY, HumanEvalFile, HumanEvalItem
from .summary import COLLECTOR_KEY, Collector
from .terminal import Progress, QuietSamples, Section

if TYPE_CHECKING:
    import pluggy  # pytest's own hook machinery: its types only

COLLECT_KEY = pytest.StashKey[Path]()
INTERRUPTED_KEY = pytest.StashKey[bool]()  # Ctrl-C during generation: raised again when collection starts
PLUGINS_KEY = pytest.StashKey[list[tuple[str, object]]]()  # the objects registered for this session
# The validated config (and, on an xdist worker, the controller's plan) between configure and session start.
PENDING_KEY = pytest.StashKey[tuple[RunConfig, "Plan | None"]]()
NOT_STARTED = ("not started (--collect-only)", "", "", "")
OUTPUT_OPTIONS = ("humaneval_results", "humaneval_report", "humaneval_markdown", "humaneval_html")
# The pytest-timeout safety net sits this far above the sandbox's own wall-clock limit (a HumanEval sample's two
# attempts of timeout_s, a HumanEval+ sample's two suites at their caps, each judged at most twice).
SAFETY_NET_MARGIN_S = 60.0


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("humaneval", "HumanEval benchmark (pytest-humaneval)")
    group.addoption("--humaneval-config", metavar="PATH", default=None,
                    help="YAML run config; turns the session into the HumanEval benchmark.")
    group.addoption("--humaneval-results", metavar="PATH", default=None,
                    help="Write one JSON line per sample, as results arrive.")
    group.addoption("--humaneval-report", metavar="PATH", default=None,
                    help="Write the run summary (pass@k, coverage, counts, dataset digest) as JSON.")
    group.addoption("--humaneval-markdown", metavar="PATH", default=None,
                    help="Write a Markdown summary (for $GITHUB_STEP_SUMMARY or a merge-request comment).")
    group.addoption("--humaneval-html", metavar="PATH", default=None,
                    help="Write the run as one self-contained HTML page (scores, gate, every problem and sample).")
    group.addoption("--humaneval-baseline", metavar="PATH", default=None,
                    help="Gate against this earlier report JSON (overrides gate.baseline).")
    group.addoption("--humaneval-min-pass-at-1", metavar="X", default=None, type=float,
                    help="Gate: fail unless pass@1 >= X (overrides gate.min_pass_at_1).")
    group.addoption("--humaneval-allow-partial", action="store_true", default=False,
                    help="Gate: judge a run whose -k/--lf/--deselect left planned samples out (gate.allow_partial).")
    group.addoption("--humaneval-score-only", action="store_true", default=False,
                    help="Failing samples are the model's score, not a failed session: exit 0 when every planned "
                         "sample got a verdict (1 when samples were lost, or another test failed), as a gate does. "
                         "For a baseline run, or a project's own pytest with the benchmark in it (ini: "
                         "humaneval_score_only).")
    group.addoption("--humaneval-generations", metavar="DIR", default=None,
                    help="Store runtime completions here and reuse them on reruns (default: pytest's cache).")
    group.addoption("--humaneval-set", action="append", default=[], metavar="KEY=VALUE",
                    help="Set one config key for this run, in place of the file's (repeatable): target.model, "
                         "target.endpoint, target.samples, target.allow_subset, target.extract, dataset, params.limit, "
                         "params.n, params.protocol, params.temperature, params.top_p, params.k, params.max_tokens, "
                         "params.timeout_s, params.concurrency, params.workers; without a config, a samples run from "
                         "target.mode, target.samples and params.allow_code_execution. Recorded in the report "
                         "(run.overrides).")
    group.addoption("--humaneval-regenerate", action="store_true", default=False,
                    help="Request every completion afresh instead of reusing stored ones (a new draw).")
    parser.addini("humaneval_config", "YAML run config for pytest-humaneval (same as --humaneval-config; "
                  "relative to the ini file).", default=None)
    parser.addini("humaneval_score_only", "Same as --humaneval-score-only: failing samples do not fail the "
                  "session, lost samples do.", type="bool", default=False)
    parser.addini("humaneval_generations", "Folder of the runtime generation store (same as "
                  "--humaneval-generations; relative to the ini file).", default=None)


def _config_path(config: pytest.Config, name: str = "humaneval_config") -> Path | None:
    """The option's path, else the ini key's (relative to the ini file), else None."""
    option = config.getoption(name)
    if option:
        return Path(option).expanduser().resolve()
    ini = config.getini(name)
    if ini:
        base = config.inipath.parent if config.inipath else config.rootpath
        return (base / os.path.expanduser(str(ini))).resolve()
    return None


def _sets_without_config(path: Path) -> str:
    """--humaneval-set with the ini key's config left out of the session: it would do nothing (exit 5)."""
    return (f"--humaneval-set: expected the benchmark in this session, found it left out: only the "
            f"humaneval_config ini key names {path}, and pytest was given paths of its own; add the config "
            "among them, or pass --humaneval-config")


def _samples_of_sets(config: pytest.Config, sets: Sequence[str]) -> Path:
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


def _left_out_by_paths(config: pytest.Config, path: Path) -> bool:
    """Only the ini key names the config, and pytest was given paths of its own (one test file, an IDE's run):
    those tests are the session and the benchmark stays out (the plugin is inert). Naming the config file among
    the paths, or --humaneval-config, adds it; a bare ``pytest`` runs the project's tests and the benchmark."""
    if config.getoption("humaneval_config") or config.args_source != pytest.Config.ArgsSource.ARGS:
        return False
    return all(Path(arg.split("::")[0]).resolve() != path for arg in config.args)


def _generations_folder(config: pytest.Config) -> Path | None:
    """Where runtime completions are stored: the option or ini key, else pytest's cache (so --cache-clear
    forgets them and -p no:cacheprovider stores nothing)."""
    folder = _config_path(config, "humaneval_generations")
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


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Validate (the config, the options, the endpoint's key and URL) and register the plugin's objects; the
    work of the run (the plan, a download, expected outputs, the sandbox) waits for ``pytest_sessionstart``,
    so ``--collect-only``, ``--fixtures`` or ``--markers`` do none of it that they do not need."""
    path = _config_path(config)
    sets = config.getoption("humaneval_set") or ()
    from_sets = False  # no config file: --humaneval-set makes a samples run's config, and its file is collected
    if path is None or _left_out_by_paths(config, path):
        if not sets:
            return
        if path is not None:
            raise pytest.UsageError(_sets_without_config(path))
        path, from_sets = _samples_of_sets(config, sets), True
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None and config.pluginmanager.hasplugin("xdist"):
        _check_hosts(config)
    try:
        plan: Plan | None = None
        if workerinput is not None and CONFIG_INPUT in workerinput:
            # An xdist worker: the controller's config and plan, never the files (see distributed.py).
            run_config = config_from_json(workerinput[CONFIG_INPUT])
            plan = Plan.from_json(workerinput[PLAN_INPUT])
        else:
            here = config.invocation_params.dir
            loaded = config_from_sets(sets, here) if from_sets else load_config(path, sets, here)
            run_config = _with_gate_options(config, loaded)
    except (ConfigError, DatasetError) as exc:
        raise pytest.UsageError(str(exc)) from exc
    if workerinput is not None and not path.is_file():
        option = "--humaneval-set target.samples" if from_sets else "--humaneval-config"
        raise pytest.UsageError(f"{option}: {path} is not on this xdist worker, which collects the file "
                                "(its contents come from the controller): make it available there (--rsyncdir)")
    config.stash[COLLECT_KEY] = path  # where this process finds the file to collect (run_config.path: the
    #                                   controller's, which a --tx popen//chdir worker sees elsewhere)
    if workerinput is None:
        _check_outputs(config)
    if run_config.target.mode == "runtime" and workerinput is None:
        _check_runtime_gates(run_config, key=not _lists_only(config))
    config.stash[PENDING_KEY] = (run_config, plan)
    if workerinput is None:
        _warn_seeded(config, run_config)
        warning = outcomes.timeout_warning(config, run_config.params.timeout_s)
        if warning is not None:
            config.issue_config_time_warning(pytest.PytestConfigWarning(warning), stacklevel=2)
    _point_collection_at(config, path, from_option=bool(config.getoption("humaneval_config")) or from_sets)
    if config.pluginmanager.hasplugin("xdist"):
        from .distributed import XdistHooks  # imports xdist: only when it is there
        _own(config, XdistHooks(), "humaneval-xdist")
    if run_config.executes:
        _own(config, PoolHooks(), "humaneval-pool")
    if workerinput is None:
        if not config.option.collectonly:  # --collect-only scores nothing and writes nothing
            collector = config.stash[COLLECTOR_KEY] = Collector()  # it gets the run at session start
            _own(config, collector, "humaneval-collector")
            for name, writer in writers.make(config):  # one per output asked for
                _own(config, writer, name)
            quiet = QuietSamples(config)
            for name, plugin in quiet.plugins():
                _own(config, plugin, name)
            _own(config, Section(config, quiet), "humaneval-section")
        if config.pluginmanager.hasplugin("html"):  # pytest-html: optional, its hooks exist only with it
            _own(config, PytestHtmlHooks(), "humaneval-pytest-html")


def _check_hosts(config: pytest.Config) -> None:
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


def _check_outputs(config: pytest.Config) -> None:
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


def _warn_unreportable_k(config: pytest.Config, run_config: RunConfig, plan: Plan) -> None:
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


def _warn_chat_answers(config: pytest.Config, run_config: RunConfig, plan: Plan) -> None:
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


def _warn_seeded(config: pytest.Config, run_config: RunConfig) -> None:
    """A fixed seed sent in every request of a problem: samples drawn in separate requests are the same answer."""
    params = run_config.params
    seeded = (params.extra_body or {}).get("seed") is not None
    if seeded and run_config.target.mode == "runtime" and params.request_n is not None and params.request_n < params.n:
        warn_at(config, f"pytest-humaneval: params.extra_body.seed with params.n {params.n} and params.request_n "
                        f"{params.request_n}: every request sends the same seed, so the samples of a problem drawn in "
                        "separate requests repeat one another (a server seeds the choices of one request apart, not "
                        "its requests) and pass@k measures fewer samples than n; leave the seed out, or set "
                        f"params.request_n to {params.n}", run_config.path, "params.extra_body")


def _warn_incomparable(config: pytest.Config, run_config: RunConfig, plan: Plan) -> None:
    """A pass@k computed under settings no published protocol uses: one warning line each, naming the preset
    that would make it comparable (protocol.pitfalls)."""
    described = describe_protocol(run_config, plan)
    key = next((key for key in ("params.protocol", "params.temperature", "params.n") if
                line_of(run_config.path, key) > 1), "target.mode")
    for warning in (described or {}).get("warnings", []):
        warn_at(config, f"pytest-humaneval: {warning}", run_config.path, key)


def _with_gate_options(config: pytest.Config, run_config: RunConfig) -> RunConfig:
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


def _baseline(run_config: RunConfig, plan: Plan) -> Baseline | None:
    """Load the baseline report now, and refuse one that measured something else, before anything runs."""
    if run_config.gate is None or run_config.gate.baseline is None:
        return None
    try:
        baseline = load_baseline(run_config.gate.baseline)
        check_digest(baseline, plan.selection.label, plan.selection.digest,
                     compared_settings(planned_view(run_config, plan)))
    except BaselineError as exc:
        raise pytest.UsageError(f"gate.baseline: {exc}") from exc
    return baseline


def _check_runtime_gates(run_config: RunConfig, key: bool = True) -> None:
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


@pytest.hookimpl(tryfirst=True)  # before xdist starts its workers and the terminal prints its header
def pytest_sessionstart(session: pytest.Session) -> None:
    """The run's work, once per session: the plan (a download, a samples file, the expected outputs of an
    EvalPlus dataset), the baseline's check, this process's sandbox; then, in runtime mode, on the controller,
    every completion, before items run or workers start. ``--collect-only`` needs only the plan's samples: no
    expected outputs, no sandbox, no generation."""
    config = session.config
    pending = config.stash.get(PENDING_KEY, None)
    if pending is None:
        return
    run_config, plan = pending
    collect_only = _lists_only(config)
    controller = not hasattr(config, "workerinput")
    try:
        if plan is None:
            plan = build_plan(run_config, Progress(config), expected=not collect_only, extractor=_extractor(config))
            run_config = with_k(run_config, list(Counter(sample.task_id for sample in plan.samples).values()))
        elif isinstance(plan.suites, Suites) and not collect_only:
            plan.suites.ensure()  # on the controller's machine, read from its cache; elsewhere, made here
    except NotDownloaded as exc:  # --collect-only downloads nothing: the benchmark's samples are not listed
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.write_line(f"humaneval: --collect-only: {exc}: its samples are not listed")
        return
    except (ConfigError, DatasetError) as exc:
        raise pytest.UsageError(str(exc)) from exc
    baseline = _baseline(run_config, plan) if controller else None
    if controller:
        _warn_unreportable_k(config, run_config, plan)
        _warn_incomparable(config, run_config, plan)
        _warn_chat_answers(config, run_config, plan)
    applied = NOT_STARTED if collect_only else _start_sandbox(config, run_config)
    run = config.stash[RUN_KEY] = Run(run_config, plan, *applied)
    collector = config.stash.get(COLLECTOR_KEY, None)
    if collector is not None:
        collector.use(run, baseline)
    if run.config.target.mode != "runtime" or not controller or collect_only:
        return
    from ..completions import generation  # httpx and asyncio: imported by runtime sessions only

    try:
        plan = generation.generate_completions(run.config, run.plan,
                                               config.pluginmanager.get_plugin("terminalreporter"), collector,
                                               _generations_folder(config), config.getoption("humaneval_regenerate"),
                                               _extractor(config))
    except generation.PreflightFailed as exc:
        raise pytest.UsageError(f"{run.config.path}: {exc}") from None
    except generation.GenerationInterrupted as exc:
        # pytest calls sessionfinish (and so writes every output) only once sessionstart has returned: the
        # interrupt is raised again when collection starts, with the plan of what was generated.
        plan = exc.plan
        config.stash[INTERRUPTED_KEY] = True
        if collector is not None:
            collector.interrupted = "KeyboardInterrupt during generation"
    config.stash[RUN_KEY] = dataclasses.replace(run, plan=plan)
    if collector is not None:
        collector.use(config.stash[RUN_KEY])


def _extractor(config: pytest.Config) -> Callable[[str, str, str], Extraction]:
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


def _start_sandbox(config: pytest.Config, run_config: RunConfig) -> tuple[str, str, str, str]:
    """Start this process's sandbox now, so a strict request fails before anything runs: (the isolation, how
    memory and processes are limited, which uid candidates get, what else confines them)."""
    if not run_config.executes:
        return "none (replay)", "", "", ""
    requested = run_config.params.isolation
    allowed = requested != "auto" or run_config.params.allow_basic  # auto ends in basic only when the file says so
    if hasattr(config, "workerinput"):
        # An xdist worker: the controller started a sandbox first (a strict request that cannot be met has
        # failed there, as a usage error) and reports the isolation. This one starts while the worker
        # collects; the worker waits for it before its first item (ahead.py), and a remote worker (--tx)
        # that cannot meet a strict request fails its items with the reason.
        # (a remote one that would end in basic unasked asks what strict asks: its items fail with the reason)
        sandbox.configure(requested if allowed else "strict", wait=False)
        return "started by an xdist worker: the controller reports it", "", "", ""
    try:
        box = sandbox.configure(requested)
    except sandbox.SandboxError as exc:
        if requested == "strict":
            raise pytest.UsageError(f"{run_config.path}: params.isolation: {exc}") from exc
        return "unavailable", "", "", ""  # each item then reports the sandbox failure as a harness_error
    if box.isolation == "basic" and not allowed:
        reason = box.isolation_reason
        sandbox.shutdown()
        raise pytest.UsageError(
            f"{run_config.path}: params.isolation: auto found neither namespaces nor Landlock here ({reason}); the "
            "basic sandbox that is left lets a candidate read what you can read (your files, the datasets' answers), "
            "so it runs only when asked: set params.isolation: basic, or params.allow_basic: true")
    if box.isolation == "basic" and requested == "auto":
        config.issue_config_time_warning(pytest.PytestConfigWarning(
            f"pytest-humaneval: neither namespaces nor Landlock are available ({box.isolation_reason}); "
            "running candidates in the basic subprocess sandbox, which can read your files"), stacklevel=2)
    if not box.limits.startswith("cgroup"):
        config.issue_config_time_warning(pytest.PytestConfigWarning(
            f"pytest-humaneval: memory and process limits are per process, not per sample: {box.limits}"),
            stacklevel=2)
    return box.isolation, box.limits, box.ids, box.confinement


def _point_collection_at(config: pytest.Config, path: Path, from_option: bool) -> None:
    """``--humaneval-config`` without positional paths: the session is exactly the benchmark. With positional paths,
    or with only the ini key (a project whose own ``pytest`` includes the benchmark), the benchmark joins what
    pytest collects anyway (the paths, ``testpaths``, or the current folder): the project's tests still run."""
    if config.args_source != pytest.Config.ArgsSource.ARGS and from_option:
        config.args = [str(path)]
    elif all(Path(arg.split("::")[0]).resolve() != path for arg in config.args):
        config.args = [*config.args, str(path)]


def _lists_only(config: pytest.Config) -> bool:
    """--collect-only, --fixtures, --fixtures-per-test: the session lists what it collected and runs nothing."""
    option = config.option
    return bool(option.collectonly or getattr(option, "showfixtures", False)
                or getattr(option, "show_fixtures_per_test", False))


def _own(config: pytest.Config, plugin: object, name: str) -> None:
    """Register one of the plugin's objects for this session; ``pytest_unconfigure`` unregisters it."""
    config.pluginmanager.register(plugin, name)
    config.stash.setdefault(PLUGINS_KEY, []).append((name, plugin))


def pytest_unconfigure(config: pytest.Config) -> None:
    registered = config.stash.get(PLUGINS_KEY, [])
    for name, plugin in registered[::-1]:
        config.pluginmanager.unregister(plugin, name)
    config.stash[PLUGINS_KEY] = []
    if COLLECTOR_KEY in config.stash:
        del config.stash[COLLECTOR_KEY]
    if RUN_KEY in config.stash:
        sandbox.shutdown()


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    if session.config.stash.get(INTERRUPTED_KEY, False):
        raise KeyboardInterrupt  # pytest now reports an interrupted session, with every output written


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    path = parent.config.stash.get(COLLECT_KEY, None)
    if path is not None and file_path.resolve() == path:
        return HumanEvalFile.from_parent(parent, path=file_path)  # its samples once per session (items.py)
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    """One line per failing sample, and its verdict on the teardown report only (see outcomes.py)."""
    outcome = yield
    if isinstance(item, HumanEvalItem):
        outcomes.finish_report(item, call, outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    yield
    if isinstance(item, HumanEvalItem):
        item.release()  # its three reports are made and logged: the session keeps the item, not its verdict


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    outcomes.restore_line(report)  # pytest < 9 on an xdist controller: the summary's reason (outcomes.py)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    run = config.stash.get(RUN_KEY, None)
    if run is None:
        return
    outcomes.no_reruns(config, items)
    if not _wants_safety_net(config):
        return
    plain = pytest.mark.timeout(sandbox.SAMPLE_ATTEMPTS * run.config.params.timeout_s + SAFETY_NET_MARGIN_S)
    # A HumanEval+ sample is two suites, each up to min(60 s, its per-input limits) + 1 s an attempt, and judged
    # at most twice (batched, then one input at a time): whatever params.timeout_s says, the net never cuts an
    # honest one.
    suites = pytest.mark.timeout(2 * sandbox.SUITE_ATTEMPTS * sandbox.SUITE_CAP_S + SAFETY_NET_MARGIN_S)
    for item in items:
        if isinstance(item, HumanEvalItem):
            item.add_marker(suites if item.judged_by_suites() else plain)


def _wants_safety_net(config: pytest.Config) -> bool:
    """pytest-timeout present and the user set no timeout of their own (option, ini or environment)."""
    if not config.pluginmanager.hasplugin("timeout"):
        return False
    user_set = (config.getoption("timeout", None) is not None or config.getini("timeout")
                or os.environ.get("PYTEST_TIMEOUT"))
    return not user_set


def pytest_report_header(config: pytest.Config) -> str | None:
    return outcomes.reruns_note(config) if RUN_KEY in config.stash else None


class PytestHtmlHooks:
    """Registered only when pytest-html is present: its report's summary gets pass@k, coverage and the gate."""

    def pytest_html_results_summary(self, prefix: list[str], session: pytest.Session) -> None:
        collector = session.config.stash.get(COLLECTOR_KEY, None)
        if collector is not None and collector.finished and collector.report:
            prefix.append(html_report.summary_fragment(collector.report))
