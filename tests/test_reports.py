"""What pytest shows and writes for a sample: one line per status, reruns, pytest-timeout, JUnit per its schema."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from sessions import NO_CACHE, read_report, read_rows

from pytest_humaneval import sandbox
from pytest_humaneval.sandbox.pool import VerdictPool

# The JUnit schema of pytest's default family (xunit2), as pytest's own test suite validates against it: from
# pytest 9.2.0's source distribution, testing/example_scripts/junit-10.xsd (MIT licence, in the file).
JUNIT_XSD = Path(__file__).resolve().parent / "data" / "junit-10.xsd"

SOLVED_0 = {"task_id": "HumanEval/0", "completion": "    return any(abs(a - b) < threshold for i, a in "
            "enumerate(numbers) for b in numbers[i + 1:])\n"}
WRONG_0 = {"task_id": "HumanEval/0", "completion": "    return False\n"}
CRASH_2 = {"task_id": "HumanEval/2", "completion": "    return number / 0\n"}
NULL_2 = {"task_id": "HumanEval/2", "completion": None}
SLOW_2 = {"task_id": "HumanEval/2", "completion": "    import time\n    time.sleep(12)\n    return number % 1.0\n"}


def samples_config(pytester: pytest.Pytester, rows: list[dict], params: str = "", extra: str = "") -> Path:
    (pytester.path / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    path = pytester.path / "humaneval.yaml"
    path.write_text("target: {mode: samples, samples: samples.jsonl, allow_subset: true}\n"
                    f"params: {{allow_code_execution: true{params}}}\n{extra}")
    return path


def test_harness_error_is_one_line(pytester, monkeypatch):
    """A harness error is one line, in the failure block and in the summary."""
    monkeypatch.setattr(sandbox.harness, "SUPERVISOR", Path("/nonexistent/_supervisor.py"))
    cfg = pytester.path / "humaneval.yaml"
    cfg.write_text("target: {mode: mock}\nparams: {execute: true, limit: 2}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "-rA", *NO_CACHE)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines([
        "*_ ERROR at setup of HumanEval/0 sample 0 _*",
        "harness_error: the sandbox supervisor did not start*",
        "*_ ERROR at setup of HumanEval/1 sample 0 _*",
        "harness_error: the sandbox supervisor did not start*",
        "ERROR *::HumanEval/0[[]0[]] - harness_error: the sandbox supervisor*",
        "ERROR *::HumanEval/1[[]0[]] - harness_error: the sandbox supervisor*",
    ])
    errors_section = result.stdout.str().split("= ERRORS =")[1].split("= HumanEval =")[0]
    assert len(errors_section.splitlines()) <= 8, errors_section  # two headers and two lines, not 600


def test_harness_fault_is_harness_error(pytester, monkeypatch):
    """A fault of the harness itself counts as harness_error, in one line."""
    def broken(program, limits):
        raise KeyError("a bug in the harness")

    monkeypatch.setattr(sandbox.Sandbox, "run", lambda self, program, limits: broken(program, limits))
    cfg = samples_config(pytester, [SOLVED_0])
    result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "--humaneval-report", "r.json",
                                "--tb=short", *NO_CACHE)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["harness_error: the harness failed on this sample: KeyError: 'a bug in the harness'"])
    report = read_report(pytester.path / "r.json")
    assert report["counts"]["harness_error"] == 1 and report["counts"]["not_run"] == 0


def test_harness_errors_are_listed_apart_with_their_detail(pytester, monkeypatch):
    """With pytest's default output (which leaves the samples' failure blocks out), the HumanEval section still
    lists each harness_error with what went wrong, apart from the model's failures: a broken harness is never
    mistaken for a low score, and a CI log says why."""
    def broken(box, program, limits):
        if "return None" in program.completion:
            return real(box, program, limits)
        raise RuntimeError("the sandbox supervisor did not start: no answer within 60 s (its last start-up step: "
                           "namespaces); its processes: 123 python D in copy_net_ns")

    real = sandbox.Sandbox.run
    monkeypatch.setattr(sandbox.Sandbox, "run", broken)
    monkeypatch.setattr(VerdictPool, "take", lambda self, item, cancel=None: None)  # each sample run when asked
    cfg = samples_config(pytester, [SOLVED_0, {"task_id": "HumanEval/0", "completion": "    return None\n"}])
    result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", *NO_CACHE)
    result.assert_outcomes(errors=1, failed=1)
    result.stdout.fnmatch_lines([
        "harness   1 sample(s) the harness could not judge (not the model's failures; each counts as failed in "
        "pass@k):",
        "  HumanEval/0[[]0[]] harness_error: the harness failed on this sample: RuntimeError: the sandbox supervisor "
        "did not start: no answer within 60 s (its last start-up step: namespaces); its processes: 123 python D in "
        "copy_net_ns",
        "failing   1 sample(s):",
        "  HumanEval/0[[]1[]] assertion_failed: *",
        "details   1 failing samples are the score, not broken tests: *",
    ])


def test_multiline_fault_is_one_line(pytester, monkeypatch):
    """A harness fault whose message has newlines stays on one line."""
    def broken(program, limits):
        raise RuntimeError("a bug in the harness\npass@1 1.000  coverage 164/164  FORGED")

    monkeypatch.setattr(sandbox.Sandbox, "run", lambda self, program, limits: broken(program, limits))
    cfg = samples_config(pytester, [SOLVED_0])
    result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "-rA", *NO_CACHE)
    result.assert_outcomes(errors=1)
    assert not [line for line in result.outlines if line.startswith("pass@1 1.000  coverage 164/164  FORGED")]
    result.stdout.fnmatch_lines(["*harness_error: the harness failed on this sample: RuntimeError: a bug in the "
                                 "harness\\npass@1 1.000*"])


@pytest.mark.slow
@pytest.mark.parametrize("dist", [("-p", "no:xdist"), ("-n", "2")])
def test_summary_lines_carry_the_reason(pytester, dist):
    """The failed and skipped summary lines carry the reason."""
    cfg = samples_config(pytester, [SOLVED_0, WRONG_0, CRASH_2, NULL_2])
    result = pytester.runpytest("--humaneval-config", str(cfg), *dist, "-rA", *NO_CACHE)
    result.assert_outcomes(passed=1, failed=2, skipped=1)
    result.stdout.fnmatch_lines_random([
        "FAILED *::HumanEval/0[[]1[]] - assertion_failed: AssertionError*",
        "FAILED *::HumanEval/2[[]0[]] - runtime_error: ZeroDivision*",
        "SKIPPED [[]1[]] *: not_run: no completion: null in the samples file",
    ])


@pytest.mark.slow
def test_reruns_do_not_execute_again(pytester, monkeypatch):
    """Reruns do not execute a sample again."""
    monkeypatch.delenv("PYTEST_ADDOPTS")  # the suite's pytester leaves pytest-rerunfailures out (conftest.py)
    cfg = samples_config(pytester, [SOLVED_0, WRONG_0])
    ways = [("--reruns", "2"), ("--force-reruns", "2"), ("--reruns", "1", "--reruns-mode", "append")]
    helped = pytester.runpytest("--help").stdout.str()
    supported = [way for way in ways if all(o in helped for o in way if o.startswith("--"))]  # by version
    assert ("--reruns", "2") in supported, "pytest-rerunfailures (the test extra) is not loaded"
    for options in supported:
        result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", *options,
                                    "--humaneval-report", "r.json", *NO_CACHE)
        outcomes = result.parseoutcomes()
        assert outcomes.get("failed") == 1 and outcomes.get("passed") == 1 and "rerun" not in outcomes, outcomes
        result.stdout.fnmatch_lines(["humaneval: reruns do not apply to benchmark samples: each is executed once*"])
        assert read_report(pytester.path / "r.json")["counts"]["assertion_failed"] == 1


# Counts, in each xdist worker, the requests pytest-rerunfailures's status database sends to the controller.
COUNT_STATUS_DB = """
import pytest


@pytest.hookimpl(trylast=True)  # after pytest-rerunfailures made its database
def pytest_configure(config):
    db = getattr(config, "failures_db", None)
    if not hasattr(config, "workerinput") or db is None:
        return
    config.db_requests = 0
    for name in ("_get", "_set"):
        def counted(*args, real=getattr(db, name)):
            config.db_requests += 1
            return real(*args)
        setattr(db, name, counted)


def pytest_sessionfinish(session):
    if hasattr(session.config, "db_requests"):
        worker = session.config.workerinput["workerid"]
        with open(f"requests-{worker}.txt", "w") as handle:
            handle.write(str(session.config.db_requests))
"""


@pytest.mark.slow
def test_idle_rerunfailures_costs_nothing(pytester, monkeypatch):
    """An installed pytest-rerunfailures costs an xdist run nothing, unless reruns are asked for."""
    monkeypatch.delenv("PYTEST_ADDOPTS")  # the suite's pytester leaves pytest-rerunfailures out (conftest.py)
    pytester.makeconftest(COUNT_STATUS_DB)
    cfg = pytester.path / "humaneval.yaml"
    cfg.write_text("target: {mode: mock}\nparams: {execute: true, limit: 20}\n")

    def requests(*options: str) -> int:
        for old in pytester.path.glob("requests-*.txt"):
            old.unlink()
        # A subprocess: under xdist, pytest-rerunfailures <= 16.6 leaves a thread spinning in the controller.
        result = pytester.runpytest_subprocess("--humaneval-config", str(cfg), "-n", "2", *options, *NO_CACHE)
        result.assert_outcomes(passed=20)
        counts = [int(path.read_text()) for path in pytester.path.glob("requests-*.txt")]
        assert len(counts) == 2, result.stdout.str()
        return sum(counts)

    assert requests() == 0, "no --reruns: the samples never reach pytest-rerunfailures's database"
    assert requests("--reruns", "1") > 0, "asked for, reruns cost what they cost (and the count above is real)"


@pytest.mark.slow
@pytest.mark.parametrize("dist", [("-p", "no:xdist"), ("-n", "2")])
def test_low_pytest_timeout_is_warned(pytester, dist):
    """A pytest-timeout below timeout_s is warned about, and the sample it stops says so."""
    # pytest-timeout's 6 s covers the solved sample's item with a sandbox to start first, on a loaded machine (at
    # load 10 a --timeout of 1 s stopped it too); the slow sample sleeps twice that.
    cfg = samples_config(pytester, [SOLVED_0, SLOW_2], params=", timeout_s: 20")
    result = pytester.runpytest("--humaneval-config", str(cfg), *dist, "--timeout", "6", "-rA",
                                "--humaneval-report", "r.json", "--humaneval-results", "results.jsonl", *NO_CACHE)
    result.assert_outcomes(passed=1, errors=1, warnings=1)
    result.stdout.fnmatch_lines([
        "*--timeout 6 s is below what a sample may take (two attempts of params.timeout_s 20 s*",
        "ERROR *::HumanEval/2[[]0[]] - harness_error: pytest-timeout stopped*",
    ])
    errors_section = result.stdout.str().split("= ERRORS =")[1].split("=====")[0]
    assert len(errors_section.splitlines()) <= 4, errors_section  # a header and one line, not 682 lines
    rows = {row["task_id"]: row for row in map(json.loads, (pytester.path / "results.jsonl").read_text().splitlines())}
    assert rows["HumanEval/2"]["status"] == "harness_error"
    # ... and what it stopped: the sample running (one worker's own sandbox), or the wait for the pool's verdict
    assert rows["HumanEval/2"]["detail"].startswith(("pytest-timeout stopped this sample after 6 s while the sandbox "
                                                     "ran it", "pytest-timeout stopped this sample after 6 s while "
                                                     "it waited for the pool's verdict")), rows["HumanEval/2"]
    report = read_report(pytester.path / "r.json")
    assert report["counts"]["harness_error"] == 1 and report["coverage"] == 0.5


def test_report_and_rows_have_their_declared_shape(pytester):
    """What a run writes has the shape scoring/schema.py declares: every status, a repeat (dedupe), a sample
    with no completion, a candidate's output; read_report and read_rows check each key (the runtime, HumanEval+
    and impossible fields are checked where those runs read them: test_generation_store, test_plus_run)."""
    rows = [SOLVED_0, dict(SOLVED_0), WRONG_0, CRASH_2, NULL_2,
            {"task_id": "HumanEval/2", "completion": "    print('to stdout')\n    return 0.0\n"}]
    cfg = samples_config(pytester, rows)
    result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "--humaneval-report", "r.json",
                                "--humaneval-results", "results.jsonl", *NO_CACHE)
    result.assert_outcomes(passed=2, failed=3, skipped=1)
    report = read_report(pytester.path / "r.json")
    written = read_rows(pytester.path / "results.jsonl")
    assert report["counts"]["not_run"] == 1 and [row.get("repeat_of") for row in written][:2] == [None, 0]
    assert any("stdout" in row for row in written), written


SLOW_START = """
import time
from pytest_humaneval.sandbox import harness

_handshake = harness.Sandbox._handshake


def slow_handshake(self):
    time.sleep(8)  # a sandbox that takes longer to start than pytest-timeout gives an item
    _handshake(self)


harness.Sandbox._handshake = slow_handshake
"""


@pytest.mark.slow
def test_xdist_worker_sandbox_start_is_not_charged_to_its_first_item(pytester):
    """An xdist worker's sandbox starts while it collects; a slow start (a busy machine) is waited for before the
    first item, outside that item's pytest-timeout, so it never turns into a harness_error. (Before, the first
    item of each worker was stopped: "pytest-timeout stopped this sample ... while its sandbox started".)"""
    pytester.makeconftest(SLOW_START)
    cfg = samples_config(pytester, [SOLVED_0, dict(SOLVED_0, task_id="HumanEval/0")], params=", timeout_s: 1")
    result = pytester.runpytest_subprocess("--humaneval-config", str(cfg), "-n", "2", "--timeout", "6",
                                           "--humaneval-results", "results.jsonl", *NO_CACHE)
    result.assert_outcomes(passed=2)
    rows = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    assert [row["status"] for row in rows] == ["passed", "passed"], rows


def validate(path: Path) -> ET.Element:
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(str(path))
    return ET.parse(path).getroot()


@pytest.mark.slow
@pytest.mark.parametrize("dist", [("-p", "no:xdist"), ("-n", "2")])
def test_junit_validates(pytester, dist):
    """The JUnit XML validates against the schema of pytest's default family."""
    cfg = samples_config(pytester, [SOLVED_0, WRONG_0, CRASH_2, NULL_2], extra="gate: {min_pass_at_1: 0.9}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), *dist, "--junitxml", "junit.xml", *NO_CACHE)
    assert result.ret == 1
    root = validate(pytester.path / "junit.xml")
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert set(cases) == {"HumanEval/0[0]", "HumanEval/0[1]", "HumanEval/2[0]", "HumanEval/2[1]", "gate"}
    assert cases["HumanEval/0[1]"].find("failure").get("message").startswith("assertion_failed: AssertionError")
    assert cases["HumanEval/2[1]"].find("skipped").get("message") == "not_run: no completion: null in the samples file"
    assert all(case.find("properties") is None for case in cases.values())
    suite = {p.get("name"): p.get("value") for p in root.find("testsuite").find("properties")}
    assert suite["human-eval.pass_at_1"] == "0.25" and suite["human-eval.gate"] == "FAIL"


def test_junit_harness_error_validates(pytester, monkeypatch):
    """The JUnit XML with a harness error validates too."""
    monkeypatch.setattr(sandbox.harness, "SUPERVISOR", Path("/nonexistent/_supervisor.py"))
    cfg = samples_config(pytester, [SOLVED_0])
    pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "--junitxml", "junit.xml", *NO_CACHE)
    case = validate(pytester.path / "junit.xml").find("testsuite").find("testcase")
    assert case.find("error").get("message").startswith('failed on setup with "harness_error: the sandbox')


@pytest.mark.slow
@pytest.mark.parametrize("dist", [("-p", "no:xdist"), ("-n", "2")])
def test_xunit1_per_sample_properties(pytester, dist):
    """The JUnit XML of xunit1 carries the per-sample properties."""
    cfg = samples_config(pytester, [SOLVED_0, WRONG_0])
    pytester.runpytest("--humaneval-config", str(cfg), *dist, "--junitxml", "junit.xml", "-o",
                       "junit_family=xunit1", *NO_CACHE)
    cases = {case.get("name"): case for case in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["HumanEval/0[1]"].iter("property")}
    assert props["humaneval.task_id"] == "HumanEval/0" and props["humaneval.sample"] == "1"
    assert props["humaneval.status"] == "assertion_failed" and props["humaneval.detail"].startswith("AssertionError")
    assert float(props["humaneval.duration_ms"]) > 0


INTERRUPT_AT_4 = """
def pytest_runtest_setup(item):
    if item.name == "HumanEval/4[0]":
        raise KeyboardInterrupt  # Ctrl-C while the fifth sample starts
"""


@pytest.mark.slow
def test_interrupted_run_says_so(pytester):
    """An interrupted run says so in every output."""
    pytester.makeconftest(INTERRUPT_AT_4)
    cfg = pytester.path / "humaneval.yaml"
    cfg.write_text("target: {mode: mock}\nparams: {execute: true, limit: 10}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "--humaneval-report", "r.json",
                                "--humaneval-results", "results.jsonl", "--humaneval-markdown", "r.md",
                                "--humaneval-html", "r.html", "--junitxml", "junit.xml", *NO_CACHE,
                                no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["INTERRUPTED (KeyboardInterrupt): 4/10 samples ran, the others count as not_run"])
    report = read_report(pytester.path / "r.json")
    assert report["interrupted"] == "KeyboardInterrupt" and report["counts"]["not_run"] == 6
    rows = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    assert [row["status"] for row in rows] == ["passed"] * 4 + ["not_run"] * 6
    assert {row["detail"] for row in rows[4:]} == {
        "the run was interrupted (KeyboardInterrupt) before this sample ran"}
    markdown = (pytester.path / "r.md").read_text()
    assert markdown.splitlines()[0] == "## HumanEval: mock-execute — **interrupted**"
    assert ("**Interrupted** (KeyboardInterrupt): 4/10 planned samples ran; the others count as `not_run`, so this "
            "is not the benchmark's score.") in markdown
    page = (pytester.path / "r.html").read_text()
    assert '<span class="badge interrupted" id="interrupted">interrupted</span>' in page
    assert '<dd data-fact="interrupted">KeyboardInterrupt</dd>' in page
    properties = {p.get("name"): p.get("value") for p in ET.parse(pytester.path / "junit.xml").iter("property")}
    assert properties["human-eval.interrupted"] == "KeyboardInterrupt"


@pytest.mark.slow
def test_normal_run_is_not_interrupted(pytester):
    """A run that ends normally is not interrupted anywhere."""
    cfg = pytester.path / "humaneval.yaml"
    cfg.write_text("target: {mode: mock}\nparams: {execute: true, limit: 2}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "-x", "--humaneval-report", "r.json",
                                "--humaneval-markdown", "r.md", "--junitxml", "junit.xml", *NO_CACHE)
    assert result.ret == pytest.ExitCode.OK
    assert read_report(pytester.path / "r.json")["interrupted"] is None
    assert "nterrupted" not in (pytester.path / "r.md").read_text() + (pytester.path / "junit.xml").read_text()


@pytest.mark.slow
def test_markdown_summary(pytester):
    """The Markdown summary is written for people, and lists the failing problems."""
    cfg = samples_config(pytester, [SOLVED_0, WRONG_0, CRASH_2, NULL_2], params=", k: [1, 2]")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "--humaneval-markdown", "r.md",
                                *NO_CACHE)
    result.assert_outcomes(passed=1, failed=2, skipped=1)
    lines = (pytester.path / "r.md").read_text().splitlines()
    measures = [line.split(" | ")[0].lstrip("| ") for line in lines if line.startswith("| ") and " | " in line]
    assert measures[:4] == ["measure", "pass@1", "pass@2", "coverage"]
    assert "mean sandbox time per sample" in measures
    assert not [line for line in lines if "pass_at_" in line or "avg_latency_ms" in line], "no raw keys"
    assert lines[lines.index("### Failing problems (2 of 2)"):] == [
        "### Failing problems (2 of 2)", "",
        "- HumanEval/0: 1/2 passed (assertion_failed 1)",
        "- HumanEval/2: 0/2 passed (runtime_error 1, not_run 1)"]
