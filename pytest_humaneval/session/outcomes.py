"""How a sample's outcome reaches pytest's reports, whichever pytest version and plugins are in the session.

- **One line.** A failing or erroring sample's report is its status and decisive line, in the failure block, the
  short summary (``FAILED ... - assertion_failed: ...``) and JUnit: its ``longrepr`` is that line, a plain
  string (in setup pytest ignores the item's ``repr_failure``, so the line is set on the report). pytest before
  9 reads the short summary's reason only from a crash line (``longrepr.reprcrash.message``), never from a
  plain string: there, in each process that shows reports, the string gets that attribute (``_OneLine``, a
  ``str``); what crosses xdist stays a plain string. No private pytest module is imported.
- **The verdict** rides on the teardown report as plain values (``report.humaneval``: any attribute of a report
  crosses xdist), for the controller's aggregator. JUnit gets them as test case properties only where its
  family allows them (xunit1, legacy): pytest's default, xunit2, has no test case properties in its schema.
- **Stopped from outside.** A sample that something outside the sandbox stopped (pytest-timeout) gets no
  verdict from the sandbox: it is a ``harness_error`` that says what stopped it, not a cut-short run.
- **Reruns** (pytest-rerunfailures) never apply to a sample: a rerun would draw its verdict again and keep the
  luckier one, which is not pass@k. When none is asked for, samples carry no marker for it, so it leaves them
  alone and costs nothing (with a marker it takes over each item's protocol: two loopback round trips per item
  under xdist).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from ..engine.verdict import SAMPLE_ATTEMPTS, SUITES_LIMIT_S
from .items import PROP, RUN_KEY, VERDICT_ATTR, HumanEvalError, HumanEvalItem
from .terminal import is_sample, mark_sample

__all__ = ["finish_report", "no_reruns", "reruns_note", "reruns_requested", "restore_line", "timeout_warning",
           "user_timeout_set"]

PROPERTY_FAMILIES = ("xunit1", "legacy")  # JUnit families whose schema has test case properties
# How long a sample may hold its item beyond params.timeout_s: a killed sample is reaped and answered, and a
# sandbox of the pool (or one restarted after its supervisor died) may start within the item's time.
SAMPLE_OVERHEAD_S = 5.0
NO_RERUN = pytest.mark.flaky(reruns=0, condition=False)  # condition=False also holds against --force-reruns


def finish_report(item: HumanEvalItem, call: pytest.CallInfo[None], report: pytest.TestReport) -> None:
    """Called for each of a sample's three reports, as pytest makes them."""
    mark_sample(report)  # so the terminal can leave it out of pytest's failure sections (terminal.py)
    if report.when == "call" and report.passed and call.excinfo is None:
        failing = item.failure_line()  # a verdict that is not passed: no exception was raised for it
        if failing is not None:
            report.outcome = "failed"
            report.longrepr = one_line(item, failing)
    elif report.failed and report.when in ("setup", "call"):
        line = _failure_line(item, call)
        if line is not None:
            report.longrepr = one_line(item, line)
    if report.when != "teardown":
        report.user_properties = []  # the verdict rides on the teardown report only (no copies for xdist)
        return
    ours = [(name, value) for name, value in report.user_properties if name.startswith(PROP)]
    setattr(report, VERDICT_ATTR, {name[len(PROP):]: value for name, value in ours})
    if not _junit_has_case_properties(item.config):
        report.user_properties = [prop for prop in report.user_properties if not prop[0].startswith(PROP)]


def _failure_line(item: HumanEvalItem, call: pytest.CallInfo[None]) -> str | None:
    excinfo = call.excinfo
    if excinfo is None:
        return None
    if isinstance(excinfo.value, HumanEvalError) or call.when == "call":
        text = item.repr_failure(excinfo)
        return text if isinstance(text, str) else None
    if item.result is not None:
        return None  # a verdict was recorded: whatever failed after it is pytest's to show
    message = str(excinfo.value).strip()
    if excinfo.errisinstance(pytest.fail.Exception) and message.startswith("Timeout"):
        reason = _stopped_by_pytest_timeout(item, message, _stopped_where(excinfo))
        item.record_harness_error(reason)
        return f"harness_error: {reason}"
    # Anything else is a fault of the harness itself: the sample counts as such, and pytest shows the
    # traceback, which is what a bug report needs.
    first = message.splitlines()[0] if message else ""
    item.record_harness_error(f"the harness failed while running this sample: {excinfo.typename}: {first}")
    return None


# What the harness was doing when something outside stopped a sample: the first of these functions found on the
# stack (a sandbox's start also waits in ``_receive``; a stop that lands elsewhere says nothing more).
_STOPPED_IN = (
    ("_handshake", "while its sandbox started"),
    ("take", "while it waited for the pool's verdict"),
    ("_receive", "while the sandbox ran it"),
)


def _stopped_where(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    names = {entry.name for entry in excinfo.traceback}
    return next((f" {what}" for name, what in _STOPPED_IN if name in names), "")


def _stopped_by_pytest_timeout(item: HumanEvalItem, message: str, where: str = "") -> str:
    """Who stopped the sample and what to do: the user's own timeout, below what a sample may take, is theirs to
    raise (named as they set it); the plugin's safety net, or a timeout that was enough, is the harness's fault."""
    limit, enough = _sample_limit(item), _enough_for(item)
    fault = (f"the sandbox should have decided it within {enough:g} s ({limit}): a fault of the harness, not of the "
             "sample; please report it with this line")
    user = _user_timeout_source(item.config)
    if user is None:  # the user set no timeout: what fired is the net the plugin set in their place
        net = _marker_timeout(item)
        what = f"pytest-timeout at {net:g} s" if net is not None else message.rstrip(".")
        return (f"pytest-humaneval's own safety net ({what}, set because no timeout was configured) stopped this "
                f"sample{where}; {fault}")
    timeout, name = user
    if timeout >= enough:
        return f"pytest-timeout stopped this sample after {timeout:g} s ({name}){where}; {fault}"
    return (f"pytest-timeout stopped this sample after {timeout:g} s{where}, before the sandbox's own limit "
            f"({limit}) decided it: set {name} above {enough:g} s, or leave it unset")


def one_line(item: HumanEvalItem, text: str) -> str:
    """``text`` as the whole failure block, the short summary's reason and JUnit's message (on an xdist worker a
    plain string, which execnet can send: the controller makes it ``_OneLine`` again, ``restore_line``)."""
    return _OneLine(text) if READS_CRASH_LINE_ONLY and not hasattr(item.config, "workerinput") else text


READS_CRASH_LINE_ONLY = int(pytest.__version__.split(".")[0]) < 9


class _Crash:
    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


class _OneLine(str):
    """A failure line pytest before 9 also finds where it looks for a crash line (its short summary)."""

    __slots__ = ()

    @property
    def reprcrash(self) -> _Crash:
        return _Crash(str(self))


def restore_line(report: pytest.TestReport) -> None:
    """A sample's failure line as a report from an xdist worker brings it (a plain string) made ``one_line``
    again, before the terminal reporter keeps the report."""
    if not READS_CRASH_LINE_ONLY:  # pytest 9 reads a plain string: nothing to do on any report
        return
    from_worker = getattr(report, "node", None) is not None  # xdist's controller sets it on a worker's report
    if from_worker and type(report.longrepr) is str and is_sample(report):
        report.longrepr = _OneLine(report.longrepr)


def _junit_has_case_properties(config: pytest.Config) -> bool:
    try:
        return config.getini("junit_family") in PROPERTY_FAMILIES
    except ValueError:  # junitxml disabled (-p no:junitxml): no JUnit file at all
        return False


# -- pytest-timeout --------------------------------------------------------------------------------------------

def _user_timeout_settings(config: pytest.Config) -> list[tuple[Any, str]]:
    """Each place pytest-timeout reads its limit from that the user set (value, named as they set it: a message names
    no option they did not use), in pytest-timeout's own order of precedence; none without pytest-timeout."""
    if not config.pluginmanager.hasplugin("timeout"):
        return []
    return [(value, name) for value, name in ((config.getoption("timeout", None), "--timeout"),
                                              (os.environ.get("PYTEST_TIMEOUT"), "PYTEST_TIMEOUT"),
                                              (config.getini("timeout"), "the timeout ini option"))
            if value not in (None, "")]


def user_timeout_set(config: pytest.Config) -> bool:
    """Whether the user set a pytest-timeout limit of their own (then the plugin adds no safety net)."""
    return bool(_user_timeout_settings(config))


def _user_timeout_source(config: pytest.Config) -> tuple[float, str] | None:
    """The user's pytest-timeout limit and where they set it; None when they set none (or one pytest-timeout itself
    reports as bad)."""
    for value, name in _user_timeout_settings(config)[:1]:
        try:
            return float(value), name
        except ValueError:
            return None
    return None


def _marker_timeout(item: pytest.Item) -> float | None:
    """The timeout of the item's pytest-timeout marker: the plugin's safety net, when the user set no timeout."""
    marker = item.get_closest_marker("timeout")
    if marker is None:
        return None
    value = marker.args[0] if marker.args else marker.kwargs.get("timeout")
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _enough(timeout_s: float) -> float:
    return SAMPLE_ATTEMPTS * timeout_s + SAMPLE_OVERHEAD_S  # a starved timeout is judged once more


def _sample_limit(item: HumanEvalItem) -> str:
    """The sandbox's own limit on this sample, as a message names it."""
    if item.judged_by_suites():
        return f"two HumanEval+ suites, up to {_suites_s():g} s"
    runs = item.runs()
    each = "" if runs == 1 else f" for each of {runs} tests"
    return f"params.timeout_s {item.config.stash[RUN_KEY].config.params.timeout_s:g} s{each}"


def _enough_for(item: HumanEvalItem) -> float:
    """How long this sample may hold its item: its sandbox's limit and the overhead around it."""
    if item.judged_by_suites():
        return _suites_s() + SAMPLE_OVERHEAD_S
    return SAMPLE_ATTEMPTS * item.config.stash[RUN_KEY].config.params.timeout_s * item.runs() + SAMPLE_OVERHEAD_S


def _suites_s() -> float:
    return SUITES_LIMIT_S  # two suites, each judged at most twice


def timeout_warning(config: pytest.Config, timeout_s: float) -> str | None:
    """A warning when the user's pytest-timeout would stop samples before the sandbox's own limit does."""
    user = _user_timeout_source(config)
    if user is None:
        return None
    timeout, name = user
    if timeout <= 0 or timeout >= _enough(timeout_s):
        return None
    return (f"pytest-humaneval: {name} {timeout:g} s is below what a sample may take (two attempts of "
            f"params.timeout_s {timeout_s:g} s, as a timeout starved of CPU is judged again, plus up to "
            f"{SAMPLE_OVERHEAD_S:g} s for the sandbox): pytest-timeout will stop slow "
            f"samples first and they will be recorded as harness_error; set {name} above {_enough(timeout_s):g} s "
            "or leave it unset (the plugin then sets its own safety net)")


# -- pytest-rerunfailures --------------------------------------------------------------------------------------

def reruns_requested(config: pytest.Config) -> bool:
    """Whether pytest-rerunfailures is there and asked to rerun (--reruns, --force-reruns or the reruns ini key)."""
    if not config.pluginmanager.hasplugin("rerunfailures"):
        return False
    requested = config.getoption("force_reruns", None) or config.getoption("reruns", None)
    if not requested:
        try:
            requested = int(config.getini("reruns") or 0)
        except (TypeError, ValueError):
            requested = 0
    return bool(requested)


def no_reruns(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Only when reruns are asked for: an item with a ``flaky`` marker (even ``reruns=0``) is one pytest-rerunfailures
    runs through its own protocol, which under xdist asks the controller for the item's failure count and stores
    its rerun count, two loopback round trips per item; an item without one it leaves to pytest."""
    if not reruns_requested(config):
        return
    for item in items:
        if isinstance(item, HumanEvalItem):
            item.add_marker(NO_RERUN)


def reruns_note(config: pytest.Config) -> str | None:
    if not reruns_requested(config):
        return None
    return ("humaneval: reruns do not apply to benchmark samples: each is executed once (a rerun would draw its "
            "verdict again and keep the luckier one); your other tests are rerun as asked")
