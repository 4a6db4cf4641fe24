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

import pytest
from sessions import NO_CACHE, read_report

from pytest_humaneval.__main__ import main as cli
from pytest_humaneval.data.dataset import load_problems

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
