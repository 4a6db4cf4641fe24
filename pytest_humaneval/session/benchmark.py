"""The benchmark session: one object from configure to the last output, as pytest-xdist's ``DSession`` and
pytest-cov's ``CovPlugin`` hold theirs. It owns the run's steps, configure -> plan -> judge -> tally, and the
process's role, chosen once:

- ``SINGLE``: a session without xdist: it plans, judges every sample (its judge's pool runs them ahead, fed the
  session's items) and tallies them;
- ``CONTROLLER``: xdist's controller: it plans (generation included) and hands the config and the plan to the
  workers (``distributed.py``), starts a sandbox only to know and check the isolation, runs no sample, and
  tallies the verdicts the workers' reports bring;
- ``WORKER``: an xdist worker: it takes the controller's config and plan (never the files, which need not be
  there), and judges the samples xdist hands it (``ahead.py`` feeds its pool from xdist's queue).

``plugin.py`` keeps the hooks and hands each to this object (``BENCHMARK_KEY`` in the config's stash).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ..config import ConfigError, RunConfig, config_from_sets, load_config, with_k
from ..data.dataset import DatasetError
from ..data.plus import Suites
from ..data.releases import NotDownloaded
from ..engine import Judge
from ..engine.benchmark_run import Run
from ..engine.judge import SandboxError
from ..engine.planning import build_plan
from ..engine.report import planned_view
from ..engine.sandboxes import pool_size
from ..plan import Plan
from ..scoring.gate import Baseline, BaselineError, check_digest, compared_settings, load_baseline
from . import config_warnings, options, outcomes, writers
from .ahead import XdistQueue
from .handoff import CONFIG_INPUT, PLAN_INPUT, config_from_json
from .items import JUDGE_KEY, RUN_KEY, HumanEvalItem
from .summary import COLLECTOR_KEY, Collector
from .terminal import Progress, QuietSamples, Section

__all__ = ["BENCHMARK_KEY", "CONTROLLER", "SINGLE", "WORKER", "Benchmark"]

SINGLE, CONTROLLER, WORKER = "single process", "xdist controller", "xdist worker"
NOT_STARTED = ("not started (--collect-only)", "", "", "")


def role_of(config: pytest.Config) -> str:
    """The process's role in the session, as xdist decides it: a worker has ``workerinput``; a controller is a
    process xdist distributes from (``--dist`` other than ``no``, not ``--collect-only``: then it collects and
    lists itself)."""
    if hasattr(config, "workerinput"):
        return WORKER
    distributes = config.getoption("dist", "no") != "no" and not config.option.collectonly
    return CONTROLLER if config.pluginmanager.hasplugin("xdist") and distributes else SINGLE


class Benchmark:
    """The session's benchmark; made by ``configure`` when the session has one."""

    def __init__(self, config: pytest.Config, run_config: RunConfig, plan: Plan | None, path: Path) -> None:
        self.config = config
        self.role = role_of(config)
        self.run_config = run_config  # validated; final (with k) once the plan is made
        self.plan = plan  # on a worker, the controller's; else made at session start
        self.path = path  # where this process finds the file it collects (run_config.path: the controller's)
        self.collector: Collector | None = None  # the tally: on the controller, or the lone process
        self.interrupted = False  # Ctrl-C during generation: raised again when collection starts
        self._registered: list[tuple[str, object]] = []

    @property
    def controller(self) -> bool:
        """Whether this process plans and tallies (the xdist controller, or the lone process)."""
        return self.role != WORKER

    @property
    def run(self) -> Run | None:
        return self.config.stash.get(RUN_KEY, None)

    @property
    def judge(self) -> Judge | None:
        return self.config.stash.get(JUDGE_KEY, None)

    # -- configure: validate everything, register what this role needs; the run's work waits for session start
    @classmethod
    def configure(cls, config: pytest.Config) -> Benchmark | None:
        """The session's benchmark, validated (the config, the options, the endpoint's key and URL), its plugin
        objects registered; None when the session has none. The work of the run (the plan, a download, expected
        outputs, the sandbox) waits for ``start``, so ``--collect-only``, ``--fixtures`` or ``--markers`` do none
        of it that they do not need."""
        path = options.config_path(config)
        sets = config.getoption("humaneval_set") or ()
        from_sets = False  # no config file: --humaneval-set makes a samples run's config, and its file is collected
        if path is None or options.left_out_by_paths(config, path):
            if not sets:
                return None
            if path is not None:
                raise pytest.UsageError(options.sets_without_config(path))
            path, from_sets = options.samples_of_sets(config, sets), True
        workerinput = getattr(config, "workerinput", None)
        if workerinput is None and config.pluginmanager.hasplugin("xdist"):
            options.check_hosts(config)
        try:
            plan: Plan | None = None
            if workerinput is not None and CONFIG_INPUT in workerinput:
                # An xdist worker: the controller's config and plan, never the files (see distributed.py).
                run_config = config_from_json(workerinput[CONFIG_INPUT])
                plan = Plan.from_json(workerinput[PLAN_INPUT])
            else:
                here = config.invocation_params.dir
                loaded = config_from_sets(sets, here) if from_sets else load_config(path, sets, here)
                run_config = options.with_gate_options(config, loaded)
        except (ConfigError, DatasetError) as exc:
            raise pytest.UsageError(str(exc)) from exc
        if workerinput is not None and not path.is_file():
            option = "--humaneval-set target.samples" if from_sets else "--humaneval-config"
            raise pytest.UsageError(f"{option}: {path} is not on this xdist worker, which collects the file "
                                    "(its contents come from the controller): make it available there (--rsyncdir)")
        if workerinput is None:
            options.check_outputs(config)
            if run_config.target.mode == "runtime":
                options.check_runtime_gates(run_config, key=not options.lists_only(config))
            config_warnings.warn_seeded(config, run_config)
            warning = outcomes.timeout_warning(config, run_config.params.timeout_s)
            if warning is not None:
                config.issue_config_time_warning(pytest.PytestConfigWarning(warning), stacklevel=2)
        options.point_collection_at(config, path, bool(config.getoption("humaneval_config")) or from_sets)
        benchmark = config.stash[BENCHMARK_KEY] = cls(config, run_config, plan, path)
        benchmark._register()
        return benchmark

    def _register(self) -> None:
        config = self.config
        if config.pluginmanager.hasplugin("xdist"):
            from .distributed import XdistHooks  # imports xdist: only when it is there
            self._own(XdistHooks(), "humaneval-xdist")
        if self.role == WORKER and self.run_config.executes:
            self._own(XdistQueue(), "humaneval-pool")
        if self.controller:
            if not config.option.collectonly:  # --collect-only scores nothing and writes nothing
                self.collector = config.stash[COLLECTOR_KEY] = Collector()  # it gets the run at session start
                self._own(self.collector, "humaneval-collector")
                for name, writer in writers.make(config):  # one per output asked for
                    self._own(writer, name)
                quiet = QuietSamples(config)
                for name, plugin in quiet.plugins():
                    self._own(plugin, name)
                self._own(Section(config, quiet), "humaneval-section")
            if config.pluginmanager.hasplugin("html"):  # pytest-html: optional, its hooks exist only with it
                self._own(writers.PytestHtmlSummary(), "humaneval-pytest-html")

    def _own(self, plugin: object, name: str) -> None:
        """Register one of the session's objects; ``close`` unregisters it."""
        self.config.pluginmanager.register(plugin, name)
        self._registered.append((name, plugin))

    # -- session start: the plan, the judge, the run (and, in runtime mode, the completions)
    def start(self) -> None:
        """The run's work, once per session: the plan (a download, a samples file, the expected outputs of an
        EvalPlus dataset), the baseline's check, this process's judge and its sandbox; then, in runtime mode, on
        the controller, every completion, before items run or workers start. ``--collect-only`` needs only the
        plan's samples: no expected outputs, no sandbox, no generation."""
        config = self.config
        run_config, plan = self.run_config, self.plan
        collect_only = options.lists_only(config)
        try:
            if plan is None:
                plan = build_plan(run_config, Progress(config), expected=not collect_only,
                                  extractor=options.extractor_of(config))
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
        self.run_config, self.plan = run_config, plan
        baseline = _baseline(run_config, plan) if self.controller else None
        if self.controller:
            config_warnings.warn_unreportable_k(config, run_config, plan)
            config_warnings.warn_incomparable(config, run_config, plan)
            config_warnings.warn_chat_answers(config, run_config, plan)
        judge = config.stash[JUDGE_KEY] = Judge.of(run_config, plan, self._isolation())
        applied = NOT_STARTED if collect_only else self._start_sandbox(judge)
        run = config.stash[RUN_KEY] = Run(run_config, plan, *applied)
        if self.collector is not None:
            self.collector.use(run, baseline)
        if run_config.target.mode == "runtime" and self.controller and not collect_only:
            self._generate(run)

    def _generate(self, run: Run) -> None:
        """Every completion, before items run: the plan is the run's again with them."""
        from ..completions import generation  # httpx and asyncio: imported by runtime sessions only

        config, collector = self.config, self.collector
        try:
            plan = generation.generate_completions(run.config, run.plan,
                                                   config.pluginmanager.get_plugin("terminalreporter"), collector,
                                                   options.generations_folder(config),
                                                   config.getoption("humaneval_regenerate"),
                                                   options.extractor_of(config))
        except generation.PreflightFailed as exc:
            raise pytest.UsageError(f"{run.config.path}: {exc}") from None
        except generation.GenerationInterrupted as exc:
            # pytest calls sessionfinish (and so writes every output) only once sessionstart has returned: the
            # interrupt is raised again when collection starts, with the plan of what was generated.
            plan = exc.plan
            self.interrupted = True
            if collector is not None:
                collector.interrupted = "KeyboardInterrupt during generation"
        self.plan = plan
        config.stash[RUN_KEY] = dataclasses.replace(run, plan=plan)
        if collector is not None:
            collector.use(config.stash[RUN_KEY])

    def _isolation(self) -> str:
        """What this process's sandboxes ask for: the config's isolation; on an xdist worker where auto would end
        in basic unasked, what strict asks (the controller has refused that already; a remote worker's items
        then fail with the reason)."""
        params = self.run_config.params
        allowed = params.isolation != "auto" or params.allow_basic  # auto ends in basic only when the file says so
        return params.isolation if allowed or self.role != WORKER else "strict"

    def _start_sandbox(self, judge: Judge) -> tuple[str, str, str, str]:
        """Start this process's sandbox now, so a strict request fails before anything runs: (the isolation, how
        memory and processes are limited, which uid candidates get, what else confines them)."""
        run_config, config = self.run_config, self.config
        if not run_config.executes:
            return "none (replay)", "", "", ""
        requested = run_config.params.isolation
        sandboxes = judge.sandboxes
        assert sandboxes is not None
        if self.role == WORKER:
            # The controller started a sandbox first (a strict request that cannot be met has failed there, as a
            # usage error) and reports the isolation. This one starts while the worker collects; the worker waits
            # for it before its first item (``running``), and a remote worker (--tx) that cannot meet a strict
            # request fails its items with the reason.
            sandboxes.start(wait=False)
            return "started by an xdist worker: the controller reports it", "", "", ""
        try:
            box = sandboxes.start()
        except SandboxError as exc:
            if requested == "strict":
                raise pytest.UsageError(f"{run_config.path}: params.isolation: {exc}") from exc
            return "unavailable", "", "", ""  # each item then reports the sandbox failure as a harness_error
        if box.isolation == "basic" and requested == "auto" and not run_config.params.allow_basic:
            reason = box.isolation_reason
            judge.close()
            raise pytest.UsageError(
                f"{run_config.path}: params.isolation: auto found neither namespaces nor Landlock here ({reason}); "
                "the basic sandbox that is left lets a candidate read what you can read (your files, the datasets' "
                "answers), so it runs only when asked: set params.isolation: basic, or params.allow_basic: true")
        if box.isolation == "basic" and requested == "auto":
            config.issue_config_time_warning(pytest.PytestConfigWarning(
                f"pytest-humaneval: neither namespaces nor Landlock are available ({box.isolation_reason}); "
                "running candidates in the basic subprocess sandbox, which can read your files"), stacklevel=2)
        if not box.limits.startswith("cgroup"):
            config.issue_config_time_warning(pytest.PytestConfigWarning(
                f"pytest-humaneval: memory and process limits are per process, not per sample: {box.limits}"),
                stacklevel=2)
        return box.isolation, box.limits, box.ids, box.confinement

    # -- the run loop: the judge's pool runs the samples ahead of the items
    @contextmanager
    def running(self, session: pytest.Session) -> Iterator[None]:
        """Around the run loop: this process's pool of sandboxes, when it judges more than one sample at a time
        (without xdist fed the session's items as they will run, after ``-k``, ``--lf`` and any reordering; on a
        worker fed from xdist's queue, ``ahead.XdistQueue``), stopped when the loop ends for whatever reason (the
        last item, ``-x``, Ctrl-C), so no sample runs after the session's last item."""
        judge = self.judge
        started = judge is not None and self._run_ahead(session, judge)
        try:
            yield
        finally:
            if started:
                assert judge is not None and judge.sandboxes is not None
                judge.sandboxes.stop_ahead()

    def _run_ahead(self, session: pytest.Session, judge: Judge) -> bool:
        run, config = self.run, self.config
        if run is None or not run.config.executes or config.option.collectonly or self.role == CONTROLLER:
            return False  # (an xdist controller runs no item)
        if session.testsfailed and not config.option.continue_on_collection_errors:
            return False  # the run loop stops before any item
        sandboxes = judge.sandboxes
        assert sandboxes is not None
        if self.role == WORKER:
            # Wait here for the sandbox that started while the worker collected, so its start-up (and a
            # fallback's) is never charged to the first item's pytest-timeout: a slow start on a busy machine is a
            # slow session, not a harness_error. One that cannot start is left to the items, which each say why.
            try:
                sandboxes.start()
            except Exception:  # (a SandboxError, or the temporary folder refused)
                pass
            size = pool_size(run.config.params.workers, distributed=True)
        else:
            items = [item for item in getattr(session, "items", ()) if isinstance(item, HumanEvalItem)
                     and judge.executes(item.sample)]
            size = min(pool_size(run.config.params.workers, distributed=False), len(items))
        if size < 2:
            return False
        try:  # the process's own sandbox, started at session start, and fresh ones beside it
            sandboxes.run_ahead(size)
        except SandboxError:
            return False  # each item reports why, as without a pool
        if self.role == SINGLE:
            judge.feed(item.sample for item in items)
        return True

    # -- the end
    def close(self) -> None:
        """Unregister the session's objects and stop its sandboxes (``pytest_unconfigure``)."""
        for name, plugin in self._registered[::-1]:
            self.config.pluginmanager.unregister(plugin, name)
        self._registered = []
        if COLLECTOR_KEY in self.config.stash:
            del self.config.stash[COLLECTOR_KEY]
        judge = self.config.stash.get(JUDGE_KEY, None)
        if judge is not None:
            judge.close()
            del self.config.stash[JUDGE_KEY]


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


BENCHMARK_KEY = pytest.StashKey[Benchmark]()
