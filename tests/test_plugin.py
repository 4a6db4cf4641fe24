"""End to end: real pytest sessions (pytester), serial and with xdist, JUnit parsed, reports compared."""

from __future__ import annotations

import json
import os
import re
import shutil
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest
from sessions import NO_CACHE, QUIET_REWRITE, read_report

from pytest_humaneval import sandbox
from pytest_humaneval.engine.planning import mock_fixture_path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def fixture_statuses() -> Counter:
    rows = [json.loads(line) for line in mock_fixture_path().read_text().splitlines()]
    return Counter(row["status"] for row in rows)


def config(pytester: pytest.Pytester, text: str, name: str = "humaneval.yaml") -> Path:
    path = pytester.path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def samples_file(pytester: pytest.Pytester, rows: list[dict], name: str = "samples.jsonl") -> Path:
    path = pytester.path / name
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def comparable(report: dict) -> dict:
    """A report without what legitimately varies between runs (timings, versions)."""
    report = json.loads(json.dumps(report))
    report["measurements"].pop("human-eval.avg_latency_ms", None)
    report["run"].pop("versions")
    return report


SOLVED_0 = {"task_id": "HumanEval/0", "completion": "    return any(abs(a - b) < threshold for i, a in "
            "enumerate(numbers) for b in numbers[i + 1:])\n"}
WRONG_0 = {"task_id": "HumanEval/0", "completion": "    return False\n"}
CRASH_2 = {"task_id": "HumanEval/2", "completion": "    return number / 0\n"}
SOLVED_2 = {"task_id": "HumanEval/2", "completion": "    return number % 1.0\n"}


def test_inert_without_a_config(pytester):
    """The plugin is inert without a config."""
    pytester.makepyfile(test_plain="def test_ok():\n    assert True\n")
    result = pytester.runpytest(*NO_CACHE)
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*HumanEval*")


@pytest.mark.slow
def test_reference_run_with_xdist(pytester):
    """The reference run executes all 164 canonical solutions, with xdist."""
    cfg = config(pytester, "target: {mode: mock}\nparams: {execute: true}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-n", "2", "--junitxml", "junit.xml",
                                "-o", "junit_family=xunit1", "--humaneval-report", "report.json", *NO_CACHE)
    result.assert_outcomes(passed=164)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*= HumanEval =*", "*pass@1 1.000*", "coverage  1.000 (164/164 attempted)"])
    report = read_report(pytester.path / "report.json")
    assert report["measurements"]["human-eval.pass_at_1"] == {
        "value": 1.0, "class": "deterministic", "official": True,
        "interval": {"low": pytest.approx(0.97711, abs=1e-5), "high": 1.0, "confidence": 0.95, "method": "wilson"}}
    assert report["planned"] == report["attempted"] == 164 and report["coverage"] == 1.0
    assert report["dataset"]["full"] is True and report["dataset"]["problems"] == 164
    assert report["run"]["mode"] == "mock-execute"
    cases = ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    statuses = Counter()
    for case in cases:
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        statuses[props["humaneval.status"]] += 1
        assert float(props["humaneval.duration_ms"]) > 0
    assert statuses == {"passed": 164}


def test_mock_replay_executes_nothing(pytester, monkeypatch):
    """The mock replay reproduces the recorded verdicts without executing."""
    def forbidden(*args, **kwargs):
        raise AssertionError("mock replay must not execute anything")

    monkeypatch.setattr(sandbox.Sandbox, "run", forbidden)
    cfg = config(pytester, "target: {mode: mock}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "--humaneval-report",
                                "report.json", "-rs", *NO_CACHE)
    recorded = fixture_statuses()
    failed = recorded["assertion_failed"] + recorded["runtime_error"] + recorded["timeout"]
    result.assert_outcomes(passed=recorded["passed"], failed=failed, skipped=recorded["not_run"])
    result.stdout.fnmatch_lines(["*SKIPPED*not_run: generation failed (recorded)*"])
    report = read_report(pytester.path / "report.json")
    assert {k: v for k, v in report["counts"].items() if v} == dict(recorded)
    assert report["run"]["mode"] == "mock-replay"
    assert report["measurements"]["human-eval.pass_at_1"]["value"] == pytest.approx(recorded["passed"] / 164)


def test_failure_message(pytester):
    """The failure message shows the status and the decisive line."""
    samples_file(pytester, [WRONG_0, CRASH_2])
    cfg = config(pytester, "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "--tb=short", *NO_CACHE)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([  # the failure blocks, which --tb asks for (test_terminal.py)
        "*HumanEval/0 sample 0*",
        "assertion_failed: AssertionError (at test line *: assert candidate(*",
        "runtime_error: ZeroDivisionError: float division by zero (at completion line 1: return number / 0)",
        "*- Captured candidate traceback call -*",
    ])


@pytest.mark.slow
def test_samples_xdist_equals_serial(pytester):
    """The samples mode under xdist equals serial, and the results can be re-evaluated."""
    samples_file(pytester, [SOLVED_0, WRONG_0, CRASH_2, SOLVED_2])
    cfg = config(pytester, "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\n"
                           "params: {allow_code_execution: true, k: [1, 2]}\n")
    serial = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "--humaneval-report",
                                "serial.json", "--humaneval-results", "results.jsonl", *NO_CACHE)
    serial.assert_outcomes(passed=2, failed=2)
    parallel = pytester.runpytest("--humaneval-config", str(cfg), "-n", "2", "--humaneval-report",
                                  "parallel.json", *NO_CACHE)
    parallel.assert_outcomes(passed=2, failed=2)
    a, b = read_report(pytester.path / "serial.json"), read_report(pytester.path / "parallel.json")
    assert comparable(a) == comparable(b)
    assert a["measurements"]["human-eval.pass_at_1"]["value"] == 0.5
    assert a["measurements"]["human-eval.pass_at_2"]["value"] == 1.0
    assert a["problems"]["HumanEval/0"] == {"n": 2, "c": 1, "pass_at_1": 0.5, "pass_at_2": 1.0,
                                            "statuses": {"passed": 1, "assertion_failed": 1}}
    assert a["dataset"]["label"] == "openai_humaneval subset (2/164 problems)"

    lines = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 4
    for line in lines:
        assert {"task_id", "sample", "status", "passed", "completion", "duration_ms", "detail"} <= set(line)
    assert sorted((row["task_id"], row["sample"], row["status"]) for row in lines) == [
        ("HumanEval/0", 0, "passed"), ("HumanEval/0", 1, "assertion_failed"),
        ("HumanEval/2", 0, "runtime_error"), ("HumanEval/2", 1, "passed")]
    # The results file is itself a human-eval samples file: re-evaluating it gives the same verdicts.
    again = config(pytester, "target: {mode: samples, samples: results.jsonl, allow_subset: true}\n"
                              "params: {allow_code_execution: true, k: [1, 2]}\n", name="again.yaml")
    rerun = pytester.runpytest("--humaneval-config", str(again), "-p", "no:xdist", "--humaneval-report",
                               "again.json", *NO_CACHE)
    rerun.assert_outcomes(passed=2, failed=2)
    assert read_report(pytester.path / "again.json")["counts"] == a["counts"]


def test_bad_config_is_usage_error(pytester):
    """A bad config is a usage error, with its message."""
    cfg = config(pytester, "target: {mode: mock}\nparams: {timeout_s: -1}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR == 4
    result.stderr.fnmatch_lines([f"ERROR: {cfg}: params.timeout_s: expected a number > 0 and <= 3600, found -1"])


def test_bad_samples_row_names_line(pytester):
    """A bad samples row is a usage error naming the line."""
    samples_file(pytester, [SOLVED_0, {"task_id": "HumanEval/0", "completion": 5}])
    cfg = config(pytester, "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *samples.jsonl:2: completion: expected a string (the code appended to the "
                                 "prompt) or null, found 5"])


@pytest.mark.slow
@pytest.mark.parametrize("dist", [("-p", "no:xdist"), ("-n", "2")])
def test_k_selects_by_task_id(pytester, dist):
    """Selecting by task id with -k, the plan follows the selection."""
    cfg = config(pytester, "target: {mode: mock}\nparams: {execute: true, limit: 20}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-k", "HumanEval/1[", *dist,
                                "--humaneval-report", "report.json", *NO_CACHE)
    result.assert_outcomes(passed=1)
    report = read_report(pytester.path / "report.json")
    assert report["planned"] == 1 and list(report["problems"]) == ["HumanEval/1"]


@pytest.mark.slow
def test_ini_key_adds_to_bare_pytest(pytester):
    """The ini key adds the benchmark to a bare pytest only."""
    # A project's ini key makes the benchmark part of its bare `pytest`; it never replaces the project's suite,
    # and a run of the user's own paths (one file, an IDE's run) stays those tests alone: it used to run the
    # whole benchmark too, and fail when the model missed a problem.
    config(pytester, "target: {mode: mock}\nparams: {execute: true, limit: 3}\n", name="bench/he.yaml")
    pytester.makeini("[pytest]\nhumaneval_config = bench/he.yaml\n")
    pytester.makepyfile(test_plain="def test_ok():\n    assert True\n")
    bare = pytester.runpytest(*NO_CACHE)
    bare.assert_outcomes(passed=4)
    given = pytester.runpytest("test_plain.py", *NO_CACHE)
    given.assert_outcomes(passed=1)
    given.stdout.no_fnmatch_line("*HumanEval*")
    named = pytester.runpytest("test_plain.py", "bench/he.yaml", *NO_CACHE)  # the config among the paths
    named.assert_outcomes(passed=4)
    left_out = pytester.runpytest("-o", "humaneval_config=", *NO_CACHE)  # this run without the benchmark
    left_out.assert_outcomes(passed=1)
    left_out.stdout.no_fnmatch_line("*HumanEval*")


@pytest.mark.slow
@pytest.mark.parametrize("dist", [("-p", "no:xdist"), ("-n", "2")])
def test_ini_key_joins_testpaths(pytester, dist):
    """The ini key joins testpaths, and the option alone runs exactly the benchmark."""
    config(pytester, "target: {mode: mock}\nparams: {execute: true, limit: 3}\n", name="he.yaml")
    pytester.makeini("[pytest]\ntestpaths = unit\nhumaneval_config = he.yaml\n")
    (pytester.path / "unit").mkdir()
    (pytester.path / "unit" / "test_unit.py").write_text("def test_one():\n    pass\n\n\ndef test_two():\n    pass\n")
    pytester.makepyfile(test_elsewhere="def test_not_in_testpaths():\n    pass\n")
    with_testpaths = pytester.runpytest(*dist, *NO_CACHE)
    with_testpaths.assert_outcomes(passed=5)
    only = pytester.runpytest("--humaneval-config", "he.yaml", *dist, *NO_CACHE)
    only.assert_outcomes(passed=3)


@pytest.mark.slow
def test_early_stop_counts_not_run(pytester):
    """Stopping early counts the rest as not run."""
    samples_file(pytester, [WRONG_0, SOLVED_2, SOLVED_2])
    cfg = config(pytester, "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-x", "-p", "no:xdist", "--humaneval-report",
                                "report.json", "--humaneval-results", "results.jsonl", *NO_CACHE)
    result.assert_outcomes(failed=1)
    report = read_report(pytester.path / "report.json")
    assert report["counts"]["not_run"] == 2 and report["planned"] == 3 and report["coverage"] == pytest.approx(1 / 3)
    lines = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    assert [line["status"] for line in lines] == ["assertion_failed", "not_run", "not_run"]


@pytest.mark.slow
def test_dead_sandbox_makes_errors(pytester, monkeypatch):
    """A sandbox that cannot start makes errors, not failures."""
    monkeypatch.setattr(sandbox.harness, "SUPERVISOR", Path("/nonexistent/_supervisor.py"))
    cfg = config(pytester, "target: {mode: mock}\nparams: {execute: true, limit: 2}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "--humaneval-report",
                                "report.json", *NO_CACHE)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*harness_error: the sandbox supervisor did not start*"])
    report = read_report(pytester.path / "report.json")
    assert report["counts"]["harness_error"] == 2 and report["coverage"] == 0.0
    assert report["attempted_success_rate"] is None


@pytest.mark.slow
def test_pytest_timeout_safety_net(pytester):
    """pytest-timeout's safety net sits above the sandbox's limit, unless the user sets one."""
    pytester.makeconftest(
        "def pytest_runtest_setup(item):\n"
        "    marker = item.get_closest_marker('timeout')\n"
        "    print('TIMEOUT-MARKER', marker.args if marker else None)\n"
    )
    cfg = config(pytester, "target: {mode: mock}\nparams: {execute: true, limit: 1, timeout_s: 2}\n")
    default = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "-s", *NO_CACHE)
    default.stdout.fnmatch_lines(["*TIMEOUT-MARKER (64.0,)"])  # two attempts (a starved timeout's), + 60 s
    user = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "-s", "--timeout", "500", *NO_CACHE)
    user.stdout.fnmatch_lines(["*TIMEOUT-MARKER None"])
    # a HumanEval+ sample: two suites, each at most twice (batched, then one input at a time) at its cap, + 60 s
    plus = config(pytester, "target: {mode: mock}\ndataset: humanevalplus\nparams: {execute: true, limit: 1}\n")
    suites = pytester.runpytest("--humaneval-config", str(plus), "-p", "no:xdist", "-s", *NO_CACHE)
    suites.stdout.fnmatch_lines(["*TIMEOUT-MARKER (308.0,)"])


@pytest.mark.slow
def test_quiet_one_line_summary(pytester):
    """The quiet mode prints a one-line summary."""
    cfg = config(pytester, "target: {mode: mock}\nparams: {execute: true, limit: 2}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-q", "-p", "no:xdist", *NO_CACHE)
    result.stdout.fnmatch_lines(["pass@1 1.000  coverage 2/2  [openai_humaneval sample (2/164 problems)]"])


@pytest.mark.slow
def test_shipped_examples_run_as_documented(pytester):
    for name in ("samples.yaml", "samples.jsonl", "mock.yaml"):
        shutil.copy(EXAMPLES / name, pytester.path / name)
    result = pytester.runpytest("--humaneval-config", "samples.yaml", "-n", "2", *NO_CACHE)
    result.assert_outcomes(passed=6, failed=4)
    result.stdout.fnmatch_lines(["*pass@1 0.600  pass@2 1.000*"])


@pytest.mark.slow
def test_isolation_is_reported(pytester):
    """The isolation applied is in the summary and the report."""
    cfg = config(pytester, "target: {mode: mock}\nparams: {execute: true, limit: 2, isolation: basic}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "--humaneval-report",
                                "basic.json", *NO_CACHE)
    result.stdout.fnmatch_lines(["run * isolation basic + seccomp"])
    assert read_report(pytester.path / "basic.json")["run"]["isolation"] == "basic"
    if os.geteuid() != 0:
        pytest.skip("needs_root: isolation strict, this test's second half, needs root here (its basic half passed)")
    cfg = config(pytester, "target: {mode: mock}\nparams: {execute: true, limit: 2, isolation: strict}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-n", "2", "--humaneval-report", "strict.json",
                                *NO_CACHE)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["run * isolation namespaces + landlock ABI *, seccomp, page cache held"])
    run = read_report(pytester.path / "strict.json")["run"]
    assert run["isolation"] == "namespaces" and run["confinement"].startswith("landlock ABI"), run
    # every page a candidate can read held in memory by this run's page holders (one per xdist worker), as root
    assert re.search(r"; page cache held \(every readable page locked in memory: \d+ files, \d+ MiB\)$",
                     run["confinement"]), run


@pytest.mark.slow
def test_oversubscribed_no_false_timeouts(pytester):
    """Oversubscribed workers give no false timeouts."""
    # 8 workers on a small machine: the budget starts at the fork, so start-up and contention do not count.
    cfg = config(pytester, "target: {mode: mock}\nparams: {execute: true}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-n", "8", "-q", *NO_CACHE)
    result.assert_outcomes(passed=164)


@pytest.mark.slow
@pytest.mark.parametrize("dist", [("-p", "no:xdist"), ("-n", "2")])
def test_lf_reruns_failing_samples(pytester, dist):
    """--last-failed reruns only the failing samples."""
    samples_file(pytester, [SOLVED_0, WRONG_0, CRASH_2, SOLVED_2])
    cfg = config(pytester, "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n")
    first = pytester.runpytest("--humaneval-config", str(cfg), *dist, *QUIET_REWRITE)
    first.assert_outcomes(passed=2, failed=2)
    rerun = pytester.runpytest("--humaneval-config", str(cfg), *dist, "--lf", "--humaneval-report", "lf.json",
                               *QUIET_REWRITE)
    outcomes = rerun.parseoutcomes()  # xdist does not report the deselected count on the controller
    assert outcomes.get("failed") == 2 and "passed" not in outcomes
    assert read_report(pytester.path / "lf.json")["planned"] == 2


def test_null_completion_is_not_run(pytester):
    """A null completion in a samples file is a planned sample that does not run."""
    samples_file(pytester, [SOLVED_0, {"task_id": "HumanEval/0", "completion": None}])
    cfg = config(pytester, "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "-rs", "--humaneval-report",
                                "r.json", *NO_CACHE)
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*not_run: no completion: null in the samples file*"])
    report = read_report(pytester.path / "r.json")
    assert report["planned"] == 2 and report["coverage"] == 0.5


@pytest.mark.slow
def test_unsupported_k_is_warned(pytester):
    """A k the samples file cannot support is left out, with a warning."""
    samples_file(pytester, [SOLVED_0, WRONG_0, SOLVED_2])
    cfg = config(pytester, "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\n"
                           "params: {allow_code_execution: true, k: [1, 2]}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "--humaneval-report", "r.json",
                                *NO_CACHE)
    result.assert_outcomes(passed=2, failed=1, warnings=1)
    result.stdout.fnmatch_lines(["*pass@2 will not be reported: 1 problem(s) of *samples.jsonl have fewer than 2 "
                                 "samples (e.g. HumanEval/2)*",
                                 "*pass@2 not reported: 1 problem(s) have fewer than 2 samples (e.g. HumanEval/2)"])
    assert list(read_report(pytester.path / "r.json")["run"]["k"]) == [1]
