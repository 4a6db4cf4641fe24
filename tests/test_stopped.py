"""A run that stopped before its last sample says so everywhere, is never a baseline, and fails its own gate;
two sessions never share a results file.

On 6e0b5ca a production run made with ``-x`` wrote a report labelled full, with ``interrupted: null``, and a
candidate far worse than production passed a gate on it; ``compare`` accepted a Ctrl-C'd report; and a second
session on the same results file truncated the first one's rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest
from sessions import NO_CACHE, read_report

from pytest_humaneval.__main__ import main as cli
from pytest_humaneval.data.dataset import load_problems
from pytest_humaneval.session import outcomes
from pytest_humaneval.session.items import RUN_KEY

PROBLEMS = load_problems()[1][:10]


def write_run(pytester, name: str, wrong: set[int], gate: str = "") -> str:
    """A samples file (the first PROBLEMS, canonical but for the ``wrong`` ones) and its config."""
    rows = []
    for i, problem in enumerate(PROBLEMS):
        text = "    return None\n" if i in wrong else problem.canonical_solution
        rows.append({"task_id": problem.task_id, "completion": text})
    (pytester.path / f"{name}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    config = (f"target: {{mode: samples, samples: {name}.jsonl, allow_subset: true}}\n"
              "params: {allow_code_execution: true, workers: 1}\n" + (f"gate: {gate}\n" if gate else ""))
    (pytester.path / f"{name}.yaml").write_text(config)
    return f"{name}.yaml"


@pytest.mark.slow
@pytest.mark.parametrize("stop", [("-x",), ("--maxfail", "2")], ids=["x", "maxfail"])
@pytest.mark.parametrize("dist", [("-p", "no:xdist"), ("-n", "2")], ids=["serial", "xdist"])
def test_stopped_run_says_so(pytester, stop, dist):
    """A run stopped by -x or --maxfail says so everywhere, and fails its gate."""
    cfg = write_run(pytester, "cut", wrong={0, 1, 2}, gate="{min_pass_at_1: 0.0}")
    result = pytester.runpytest("--humaneval-config", cfg, *stop, *dist, "--humaneval-report", "cut.json",
                                "--humaneval-markdown", "cut.md", "--junitxml", "cut.xml", *NO_CACHE)
    report = read_report(pytester.path / "cut.json")
    assert report["interrupted"] and "stop" in report["interrupted"], report["interrupted"]
    if dist == ("-p", "no:xdist"):  # (under xdist the workers may have sent every verdict before it stopped)
        assert report["counts"]["not_run"] > 0
    gate = report["gate"]
    assert gate["passed"] is False
    assert any(c["name"] == "run finished" and not c["passed"] for c in gate["conditions"]), gate["conditions"]
    assert result.ret == pytest.ExitCode.TESTS_FAILED or result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*INTERRUPTED (*stop*)*samples ran*"])
    assert "interrupted" in (pytester.path / "cut.md").read_text().lower()
    properties = {p.get("name"): p.get("value") for p in ET.parse(pytester.path / "cut.xml").iter("property")}
    assert "stop" in properties.get("human-eval.interrupted", ""), properties


def test_stopped_baseline_is_refused(pytester):
    """A stopped baseline is refused before anything runs."""
    cfg = write_run(pytester, "prod", wrong={0})
    pytester.runpytest("--humaneval-config", cfg, "-x", "-p", "no:xdist", "--humaneval-report", "prod.json",
                       *NO_CACHE)
    assert read_report(pytester.path / "prod.json")["interrupted"]
    # A candidate much worse than the real production model: with the -x baseline (pass@1 near 0) it passed.
    cfg = write_run(pytester, "new", wrong=set(range(8)), gate="{baseline: prod.json, max_drop: 0.02}")
    result = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: gate.baseline: *prod.json: refusing a run that stopped before its last "
                                 "sample (stopped: *; 1/10 planned samples ran)*"])
    result.stdout.no_fnmatch_line("*passed*")


@pytest.mark.slow
def test_compare_refuses_stopped(pytester, capsys):
    """``compare`` refuses a stopped report on either side."""
    cfg = write_run(pytester, "full", wrong=set())
    pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", "--humaneval-report", "full.json", *NO_CACHE)
    cfg = write_run(pytester, "cut", wrong={3})
    pytester.runpytest("--humaneval-config", cfg, "-x", "-p", "no:xdist", "--humaneval-report", "cut.json", *NO_CACHE)
    full, cut = str(pytester.path / "full.json"), str(pytester.path / "cut.json")
    capsys.readouterr()
    assert cli(["compare", full, cut]) == 2
    assert cli(["compare", cut, full]) == 2
    assert "refusing a run that stopped before its last sample" in capsys.readouterr().err


# Holds a session after its first item until the file $HOLD_UNTIL names exists (at most 120 s): the test decides
# when the first session ends, not the machine's speed.
HOLD = """
import os, time

def pytest_runtest_logfinish():
    release = os.environ.get("HOLD_UNTIL")
    deadline = time.monotonic() + 120
    while release and not os.path.exists(release) and time.monotonic() < deadline:
        time.sleep(0.05)
"""


@pytest.mark.slow
def test_shared_results_file_loses_nothing(pytester):
    """Two sessions on one results file lose nothing."""
    # The first session holds the file while it runs (held after its first item until the test releases it);
    # the second is refused before anything runs, naming it, and the first one's rows are all there at its end.
    cfg = write_run(pytester, "held", wrong=set())
    pytester.makeconftest(HOLD)
    release = pytester.path / "release"
    first = subprocess.Popen([sys.executable, "-m", "pytest", "--humaneval-config", cfg, "-p", "no:xdist",
                              "--humaneval-results", "shared.jsonl", *NO_CACHE], cwd=pytester.path,
                             env={**os.environ, "HOLD_UNTIL": str(release)},
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        results = pytester.path / "shared.jsonl"
        while not (results.exists() and results.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)  # its first row: it is running, holds the file, and waits for the release
        assert first.poll() is None, first.communicate()[0][-2000:]
        second = pytester.runpytest_subprocess("--humaneval-config", cfg, "-p", "no:xdist",
                                               "--humaneval-results", "shared.jsonl", *NO_CACHE)
        assert second.ret == pytest.ExitCode.USAGE_ERROR
        second.stderr.fnmatch_lines([f"ERROR: --humaneval-results: *shared.jsonl is being written by another "
                                     f"pytest-humaneval session (pid {first.pid})*"])
        assert first.poll() is None  # still held: the refusal above was not luck
        release.touch()
        output = first.communicate(timeout=120)[0]
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, output[-2000:]
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(row["task_id"] for row in rows) == sorted(p.task_id for p in PROBLEMS)
    # and once it is done, the file is free again
    assert pytester.runpytest_subprocess("--humaneval-config", cfg, "-p", "no:xdist", "--humaneval-results",
                                         "shared.jsonl", *NO_CACHE).ret == 0


# -- stopped by pytest-timeout: whose timeout it was, and what the message asks of the user ----------------------

# The plugin's safety net (set where the user configured no timeout) brought down to 5 s, and a sandbox that keeps
# one marked sample for 8 s: its item, waiting for the pool's verdict, is stopped by the net, as a sample once was
# after 63 s in one of 26 identical runs, and told to "set --timeout above 8 s, or leave it unset".
SLOW_POOL = """
import time
from pytest_humaneval.sandbox import harness
from pytest_humaneval.session import plugin

plugin.SAFETY_NET_MARGIN_S = 4.0
_run = harness.Sandbox.run


def run(self, program, *args):
    if "HELD-BY-THE-HARNESS" in program.completion:
        time.sleep(8)
    return _run(self, program, *args)


harness.Sandbox.run = run
"""


@pytest.mark.slow
def test_safety_net_stop_is_the_harness_fault(pytester, monkeypatch):
    """A sample the plugin's safety net stops says it was the harness's net, its value, and that it is a harness
    fault to report; it names no option the user did not set."""
    pytester.makeconftest(SLOW_POOL)
    held = {"task_id": PROBLEMS[0].task_id, "completion": "    # HELD-BY-THE-HARNESS\n" + PROBLEMS[0].canonical_solution}
    rows = [held, {"task_id": PROBLEMS[1].task_id, "completion": PROBLEMS[1].canonical_solution}]
    (pytester.path / "net.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (pytester.path / "net.yaml").write_text("target: {mode: samples, samples: net.jsonl, allow_subset: true}\n"
                                            "params: {allow_code_execution: true, workers: 2, timeout_s: 1}\n")
    monkeypatch.delenv("PYTEST_TIMEOUT", raising=False)  # (no timeout of the user's: the net is set)
    result = pytester.runpytest_subprocess("--humaneval-config", "net.yaml", "-p", "no:xdist", "-rA",
                                           "--humaneval-results", "net-results.jsonl", *NO_CACHE)
    rows = {row["task_id"]: row for row in map(json.loads, (pytester.path / "net-results.jsonl").read_text().splitlines())}
    held = rows[PROBLEMS[0].task_id]
    assert held["status"] == "harness_error", held
    assert held["detail"] == (
        "pytest-humaneval's own safety net (pytest-timeout at 6 s, set because no timeout was configured) stopped "
        "this sample while it waited for the pool's verdict; the sandbox should have decided it within 7 s "
        "(params.timeout_s 1 s): a fault of the harness, not of the sample; please report it with this line")
    result.stdout.fnmatch_lines(["  HumanEval/0[[]0[]] harness_error: pytest-humaneval's own safety net (pytest-timeout "
                                 "at 6 s, *",
                                 "ERROR *HumanEval/0[[]0[]] - harness_error: pytest-humaneval's own safety*"])
    result.stdout.no_fnmatch_line("*--timeout*")


class TimeoutConfig:
    """What the pytest-timeout messages read of a config: the option, the ini key, the run's params.timeout_s."""

    def __init__(self, option: str | None = None, ini: str = "", timeout_s: float = 3.0) -> None:
        self.option, self.ini = option, ini
        self.pluginmanager = SimpleNamespace(hasplugin=lambda name: name == "timeout")
        self.stash = {RUN_KEY: SimpleNamespace(config=SimpleNamespace(params=SimpleNamespace(timeout_s=timeout_s)))}

    def getoption(self, name: str, default: object = None) -> object:
        return self.option if name == "timeout" else default

    def getini(self, name: str) -> str:
        return self.ini if name == "timeout" else ""


def stopped_item(config: TimeoutConfig, net: float | None = None) -> SimpleNamespace:
    marker = pytest.mark.timeout(net).mark if net is not None else None
    return SimpleNamespace(config=config, get_closest_marker=lambda name: marker if name == "timeout" else None,
                           judged_by_suites=lambda: False, runs=lambda: 1)


TOO_LOW = ", before the sandbox's own limit (params.timeout_s 3 s) decided it: set {} above 11 s, or leave it unset"
FAULT = ("; the sandbox should have decided it within 11 s (params.timeout_s 3 s): a fault of the harness, not of the "
         "sample; please report it with this line")


@pytest.mark.parametrize(("option", "env", "ini", "net", "expected"), [
    (None, None, "", 63.0, "pytest-humaneval's own safety net (pytest-timeout at 63 s, set because no timeout was "
                           "configured) stopped this sample while it waited for the pool's verdict" + FAULT),
    ("6", None, "", None, "pytest-timeout stopped this sample after 6 s while it waited for the pool's verdict"
                          + TOO_LOW.format("--timeout")),
    (None, "6", "", None, "pytest-timeout stopped this sample after 6 s while it waited for the pool's verdict"
                          + TOO_LOW.format("PYTEST_TIMEOUT")),
    (None, None, "6", None, "pytest-timeout stopped this sample after 6 s while it waited for the pool's verdict"
                            + TOO_LOW.format("the timeout ini option")),
    ("500", None, "", None, "pytest-timeout stopped this sample after 500 s (--timeout) while it waited for the "
                            "pool's verdict" + FAULT),
], ids=["safety-net", "option", "environment", "ini", "enough"])
def test_pytest_timeout_stop_names_whose_timeout(monkeypatch, option, env, ini, net, expected):
    """A stop by pytest-timeout names the timeout as the user set it, and only then asks them to raise it; the
    plugin's own safety net, or a user's timeout that was enough, is a harness fault to report."""
    if env is None:
        monkeypatch.delenv("PYTEST_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("PYTEST_TIMEOUT", env)
    item = stopped_item(TimeoutConfig(option, ini), net)
    message = f"Timeout (>{float(net or option or env or ini)}s) from pytest-timeout."
    reason = outcomes._stopped_by_pytest_timeout(item, message, " while it waited for the pool's verdict")
    assert reason == expected


@pytest.mark.parametrize(("option", "env", "ini", "named"), [
    ("6", None, "", "--timeout 6 s"), (None, "6", "", "PYTEST_TIMEOUT 6 s"),
    (None, None, "6", "the timeout ini option 6 s"), (None, "6", "7", "PYTEST_TIMEOUT 6 s"),
], ids=["option", "environment", "ini", "environment-over-ini"])
def test_low_timeout_warning_names_where_it_was_set(monkeypatch, option, env, ini, named):
    """The warning about a low pytest-timeout names it where the user set it (pytest-timeout's precedence:
    option, environment, ini), and none when they set none."""
    if env is None:
        monkeypatch.delenv("PYTEST_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("PYTEST_TIMEOUT", env)
    warning = outcomes.timeout_warning(TimeoutConfig(option, ini), 3.0)
    assert warning is not None and warning.startswith(f"pytest-humaneval: {named} is below what a sample may take")
    where = named.rsplit(" ", 2)[0]
    assert f"set {where} above 11 s or leave it unset" in warning
    assert all(other not in warning for other in ("--timeout", "PYTEST_TIMEOUT", "ini option") if other not in where)
    monkeypatch.delenv("PYTEST_TIMEOUT", raising=False)
    assert outcomes.timeout_warning(TimeoutConfig(), 3.0) is None


def test_pytest_timeout_stop_of_a_suites_sample(monkeypatch):
    """A HumanEval+ sample may take its two suites' time, whatever params.timeout_s says: that is what a timeout
    the user set must exceed."""
    monkeypatch.delenv("PYTEST_TIMEOUT", raising=False)
    item = stopped_item(TimeoutConfig("60"))
    item.judged_by_suites = lambda: True
    assert outcomes._stopped_by_pytest_timeout(item, "Timeout (>60.0s) from pytest-timeout.") == (
        "pytest-timeout stopped this sample after 60 s, before the sandbox's own limit (two HumanEval+ suites, up to "
        "248 s) decided it: set --timeout above 253 s, or leave it unset")
