"""pytest hooks and registration only: the options, and each hook handed to the session's ``Benchmark``
(benchmark.py), which owns the run (configure -> plan -> judge -> tally) and registers the objects its role needs;
collection of the config file's samples; the samples' reports (outcomes.py)."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..engine.verdict import SAMPLE_ATTEMPTS, SUITES_LIMIT_S
from . import hooks, outcomes
from .benchmark import BENCHMARK_KEY, Benchmark
from .items import RUN_KEY, HumanEvalFile, HumanEvalItem

if TYPE_CHECKING:
    import pluggy  # pytest's own hook machinery: its types only

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


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    Benchmark.configure(config)  # validates, and registers what this process's role needs


@pytest.hookimpl(tryfirst=True)  # before xdist starts its workers and the terminal prints its header
def pytest_sessionstart(session: pytest.Session) -> None:
    benchmark = session.config.stash.get(BENCHMARK_KEY, None)
    if benchmark is not None:
        benchmark.start()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, None, None]:
    benchmark = session.config.stash.get(BENCHMARK_KEY, None)
    if benchmark is None:
        yield
        return
    with benchmark.running(session):
        yield


def pytest_unconfigure(config: pytest.Config) -> None:
    benchmark = config.stash.get(BENCHMARK_KEY, None)
    if benchmark is not None:
        benchmark.close()
        del config.stash[BENCHMARK_KEY]


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    benchmark = session.config.stash.get(BENCHMARK_KEY, None)
    if benchmark is not None and benchmark.interrupted:
        raise KeyboardInterrupt  # pytest now reports an interrupted session, with every output written


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    benchmark = parent.config.stash.get(BENCHMARK_KEY, None)
    if benchmark is not None and file_path.resolve() == benchmark.path:
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
    if not config.pluginmanager.hasplugin("timeout") or outcomes.user_timeout_set(config):
        return  # the net is pytest-timeout's, and the user's own limit replaces it
    plain = pytest.mark.timeout(SAMPLE_ATTEMPTS * run.config.params.timeout_s + SAFETY_NET_MARGIN_S)
    # A HumanEval+ sample is two suites, each up to min(60 s, its per-input limits) + 1 s an attempt, and judged
    # at most twice (batched, then one input at a time): whatever params.timeout_s says, the net never cuts an
    # honest one.
    suites = pytest.mark.timeout(SUITES_LIMIT_S + SAFETY_NET_MARGIN_S)
    for item in items:
        if isinstance(item, HumanEvalItem):
            runs = item.runs()  # a standard-input problem's tests: each up to params.timeout_s
            item.add_marker(suites if item.judged_by_suites() else plain if runs == 1 else pytest.mark.timeout(
                SAMPLE_ATTEMPTS * run.config.params.timeout_s * runs + SAFETY_NET_MARGIN_S))


def pytest_report_header(config: pytest.Config) -> str | None:
    return outcomes.reruns_note(config) if RUN_KEY in config.stash else None
