"""The regression gate: statistics against hand-computed values, then real gated pytest sessions."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from fake_openai import MODEL, FakeOpenAI, choices, models
from sessions import NO_CACHE, read_report

from pytest_humaneval.__main__ import main as cli
from pytest_humaneval.config import Gate
from pytest_humaneval.data.dataset import load_problems
from pytest_humaneval.scoring.gate import Baseline, evaluate
from pytest_humaneval.scoring.stats import (
    bootstrap_mean_interval,
    compare,
    mcnemar_worse_p,
    pass_at_k_interval,
    wilson_interval,
)

PROBLEMS = load_problems()[1][:20]


# -- statistics, hand-computed -------------------------------------------------------------------------------

def test_wilson_interval():
    """The Wilson interval matches a hand computation."""
    # p = 0.8, n = 10, z = 1.95996: center = (0.8 + z^2/20) / (1 + z^2/10) = 0.71674,
    # half = z * sqrt(0.016 + z^2/400) / (1 + z^2/10) = 0.22658
    interval = wilson_interval(8, 10, 0.95)
    assert (interval.low, interval.high) == (pytest.approx(0.49016, abs=1e-5), pytest.approx(0.94332, abs=1e-5))
    assert wilson_interval(0, 10).low == 0.0 and wilson_interval(0, 10).high == pytest.approx(0.27753, abs=1e-5)
    assert wilson_interval(10, 10).high == 1.0 and wilson_interval(10, 10).low == pytest.approx(0.72247, abs=1e-5)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


@pytest.mark.parametrize(("regressions", "improvements", "p"), [
    (10, 0, 1 / 1024), (1, 0, 0.5), (3, 1, 5 / 16), (1, 3, 15 / 16), (0, 0, 1.0), (2, 2, 11 / 16)])
def test_exact_mcnemar_p_values(regressions, improvements, p):
    """The exact McNemar test's one-sided p-values."""
    assert mcnemar_worse_p(regressions, improvements) == pytest.approx(p)


def test_paired_comparison():
    """The paired comparison names the regressions and the improvements."""
    base = {"A": (1, 1), "B": (1, 1), "C": (1, 0), "D": (1, 1)}
    new = {"A": (1, 0), "B": (1, 1), "C": (1, 1), "D": (1, 0)}
    result = compare(base, new)
    assert result.regressions == ["A", "D"] and result.improvements == ["C"]
    assert result.baseline_pass_at_1 == 0.75 and result.new_pass_at_1 == 0.5
    assert result.mean_difference == -0.25 and result.drop == 0.25
    assert result.test.startswith("exact McNemar") and result.p_worse == pytest.approx(0.5)  # (C(3,2)+C(3,3))/8
    assert not result.significant(0.95)


def test_paired_bootstrap_is_deterministic():
    """The paired bootstrap, for several samples per problem, is deterministic."""
    base = {f"T{i}": (4, 4) for i in range(30)}
    same = compare(base, dict(base))
    assert same.test.startswith("paired bootstrap") and same.p_worse == 1.0 and same.mean_difference == 0
    worse = dict.fromkeys(base, (4, 1))
    result = compare(base, worse)
    assert result.p_worse == 0.0 and result.significant(0.99) and len(result.regressions) == 30
    assert compare(base, worse).interval == result.interval


def test_bootstrap_interval():
    """The bootstrap interval is seeded and brackets the mean."""
    values = [1.0] * 70 + [0.0] * 30
    first, second = bootstrap_mean_interval(values), bootstrap_mean_interval(values)
    assert first == second and first.method == "bootstrap"
    assert first.low < 0.7 < first.high and 0.55 < first.low and first.high < 0.85
    assert bootstrap_mean_interval([0.5] * 10).low == bootstrap_mean_interval([0.5] * 10).high == 0.5


def test_pass_at_k_interval_method():
    """The pass@k interval uses Wilson for a plain proportion, and the bootstrap otherwise."""
    per_problem = {"A": 1.0, "B": 0.0, "C": 1.0}
    assert pass_at_k_interval(per_problem, {"A": 1, "B": 1, "C": 1}, 1).method == "wilson"
    assert pass_at_k_interval(per_problem, {"A": 2, "B": 2, "C": 2}, 1).method == "bootstrap"


def test_conditions():
    """The gate's conditions: the floors, the coverage, and the drop against a baseline, within noise or not."""
    gate = Gate(min_pass_at_1=0.5, min_pass_at=((10, 0.9),), min_coverage=1.0)
    result = evaluate(gate, {1: 0.6, 10: 0.8}, 0.99, {"A": (10, 6)}, None)
    assert [(c.name, c.passed) for c in result.conditions] == [
        ("pass@1 >= min_pass_at_1", True), ("pass@10 >= min_pass_at.10", False),
        ("coverage >= min_coverage", False)]
    assert not result.passed and len(result.failures()) == 2
    baseline = Baseline(None, "b", "sha256:x", {"A": (1, 1), "B": (1, 1)}, "prod")
    drop = evaluate(Gate(baseline=None, max_drop=0.0), {1: 0.5}, 1.0, {"A": (1, 1), "B": (1, 0)}, baseline)
    assert drop.conditions[-1].value == 0.5 and not drop.passed
    noisy = evaluate(Gate(max_drop=0.0, confidence=0.95), {1: 0.5}, 1.0, {"A": (1, 1), "B": (1, 0)}, baseline)
    assert noisy.passed and "within noise" in noisy.conditions[-1].detail


# -- gated sessions ------------------------------------------------------------------------------------------

def write_samples(pytester, name: str, wrong: set[str]) -> None:
    rows = [{"task_id": p.task_id, "completion": "    return None\n" if p.task_id in wrong else p.canonical_solution}
            for p in PROBLEMS]
    (pytester.path / name).write_text("".join(json.dumps(row) + "\n" for row in rows))


def write_config(pytester, name: str, samples: str, gate: str = "", timeout: float = 3.0) -> str:
    text = (f"target: {{mode: samples, samples: {samples}, allow_subset: true}}\n"
            f"params: {{allow_code_execution: true, timeout_s: {timeout}}}\n")
    if gate:
        text += f"gate: {gate}\n"
    (pytester.path / name).write_text(text)
    return name


@pytest.fixture
def baseline(pytester):
    write_samples(pytester, "prod.jsonl", set())
    cfg = write_config(pytester, "prod.yaml", "prod.jsonl")
    result = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", "--humaneval-report", "prod.json",
                                *NO_CACHE)
    result.assert_outcomes(passed=20)
    return "prod.json"


@pytest.mark.slow
def test_identical_run_passes(pytester, baseline):
    """An identical run passes the gate."""
    write_samples(pytester, "new.jsonl", set())
    cfg = write_config(pytester, "new.yaml", "new.jsonl", "{baseline: prod.json, min_pass_at_1: 0.9}")
    result = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", "--humaneval-report", "new.json",
                                *NO_CACHE)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*HumanEval gate: PASS*", "PASS  pass@1 >= min_pass_at_1 * 1.000 vs 0.900",
                                 "PASS  coverage >= min_coverage * 1.000 vs 1.000",
                                 "PASS  pass@1 drop <= max_drop * 0.000 vs 0.000*"])
    gate = read_report(pytester.path / "new.json")["gate"]
    assert gate["passed"] is True and gate["comparison"]["regressions"] == []
    assert cli(["compare", str(pytester.path / baseline), str(pytester.path / "new.json")]) == 0


@pytest.mark.slow
@pytest.mark.parametrize("dist", [("-p", "no:xdist"), ("-n", "2")])
def test_regressions_fail_and_are_named(pytester, baseline, dist):
    """Clearly fewer solved problems fail the gate, and are named."""
    wrong = {p.task_id for p in PROBLEMS[::2]}
    write_samples(pytester, "new.jsonl", wrong)
    cfg = write_config(pytester, "new.yaml", "new.jsonl", "{baseline: prod.json, max_drop: 0.05, confidence: 0.95}")
    result = pytester.runpytest("--humaneval-config", cfg, *dist, "--humaneval-report", "new.json",
                                "--junitxml", "junit.xml", "--humaneval-markdown", "summary.md", *NO_CACHE)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*HumanEval gate: FAIL*",
                                 "FAIL  pass@1 drop <= max_drop * 0.500 vs 0.050  (p = 0.000977, exact McNemar*",
                                 f"regressed (10): {', '.join(sorted(wrong, key=lambda t: int(t.split('/')[1])))}"])
    root = ET.parse(pytester.path / "junit.xml").getroot()
    props = {p.get("name"): p.get("value") for p in root.find("testsuite").find("properties")}
    assert props["human-eval.gate"] == "FAIL" and props["human-eval.pass_at_1"] == "0.5"
    assert props["human-eval.dataset_digest"].startswith("sha256:")
    gate_case = [c for c in root.iter("testcase") if c.get("name") == "gate"]
    assert len(gate_case) == 1 and "pass@1 drop <= max_drop" in gate_case[0].find("failure").get("message")
    markdown = (pytester.path / "summary.md").read_text()
    assert "gate **FAIL**" in markdown and "| pass@1 drop <= max_drop | 0.500 | 0.050 | FAIL" in markdown
    assert "Regressions (10): HumanEval/0, HumanEval/2" in markdown
    assert cli(["compare", str(pytester.path / baseline), str(pytester.path / "new.json")]) == 1


@pytest.mark.slow
def test_drop_within_noise(pytester, baseline):
    """A small drop within noise passes with confidence, and fails a plain max_drop."""
    write_samples(pytester, "new.jsonl", {PROBLEMS[3].task_id})
    strict = write_config(pytester, "strict.yaml", "new.jsonl", "{baseline: prod.json, max_drop: 0}")
    result = pytester.runpytest("--humaneval-config", strict, "-p", "no:xdist", *NO_CACHE)
    assert result.ret == 1
    noisy = write_config(pytester, "noisy.yaml", "new.jsonl", "{baseline: prod.json, max_drop: 0, confidence: 0.95}")
    result = pytester.runpytest("--humaneval-config", noisy, "-p", "no:xdist", *NO_CACHE)
    result.assert_outcomes(passed=19, failed=1)
    assert result.ret == 0  # failing samples are the model's score; the gate decides the build
    result.stdout.fnmatch_lines(["PASS  pass@1 drop <= max_drop * 0.050 vs 0.000  (p = 0.5, *within noise at "
                                 "confidence 0.95)"])


@pytest.mark.slow
def test_other_measurement_is_refused(pytester, baseline):
    """A baseline that measured something else is refused."""
    write_samples(pytester, "new.jsonl", set())
    cfg = write_config(pytester, "new.yaml", "new.jsonl", "{baseline: prod.json}", timeout=5.0)
    result = pytester.runpytest("--humaneval-config", cfg, *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: gate.baseline: *prod.json: refusing to compare runs that measured "
                                 "different things: the baseline is 'openai_humaneval subset (20/164 problems)' "
                                 "(sha256:*), this run is 'openai_humaneval subset (20/164 problems)' (sha256:*); "
                                 "they differ in params.timeout_s (baseline 3, this run 5)"])


@pytest.mark.slow
def test_command_line_floor(pytester):
    """A floor on the command line creates a gate, and the coverage defaults to one."""
    write_samples(pytester, "new.jsonl", {PROBLEMS[0].task_id})
    cfg = write_config(pytester, "new.yaml", "new.jsonl")
    passing = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", "--humaneval-min-pass-at-1", "0.9",
                                 *NO_CACHE)
    assert passing.ret == 0
    failing = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", "--humaneval-min-pass-at-1", "0.99",
                                 *NO_CACHE)
    assert failing.ret == 1
    cut_short = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", "--humaneval-min-pass-at-1", "0",
                                   "-x", *NO_CACHE)
    assert cut_short.ret == 1
    cut_short.stdout.fnmatch_lines(["FAIL  coverage >= min_coverage * 0.050 vs 1.000"])
    bad = pytester.runpytest("--humaneval-config", cfg, "--humaneval-min-pass-at-1", "2", *NO_CACHE)
    assert bad.ret == pytest.ExitCode.USAGE_ERROR


@pytest.mark.parametrize("how", ["option", "ini"])
def test_score_only_failing_samples_do_not_fail_the_session(pytester, how):
    """--humaneval-score-only (or the ini key): a model that misses problems is a score, not a failed session (the
    baseline job exited 1 when the production model missed any problem); lost samples still fail it."""
    write_samples(pytester, "prod.jsonl", {PROBLEMS[0].task_id, PROBLEMS[3].task_id})
    cfg = write_config(pytester, "prod.yaml", "prod.jsonl")
    if how == "ini":
        pytester.makeini("[pytest]\nhumaneval_score_only = true\n")
    score_only = ("--humaneval-score-only",) if how == "option" else ()
    result = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", "--humaneval-report", "prod.json",
                                *score_only, *NO_CACHE)
    result.assert_outcomes(passed=18, failed=2)
    assert result.ret == pytest.ExitCode.OK
    assert read_report(pytester.path / "prod.json")["gate"] is None  # a score, not a gate: a baseline as before
    cut_short = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", "-x", *score_only, *NO_CACHE)
    assert cut_short.ret == pytest.ExitCode.TESTS_FAILED  # samples that never ran are lost, not a score
    if how == "option":  # and without it, pytest's usual status
        plain = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", *NO_CACHE)
        assert plain.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize("verdict", ["score-only", "gate"])
def test_project_test_failing_still_fails_the_session(pytester, verdict):
    """A project's bare pytest with the benchmark in it (the ini key): with score-only or a gate, its failing
    samples are a score, its own failing test is not (a passing gate turned it green)."""
    write_samples(pytester, "prod.jsonl", {PROBLEMS[0].task_id})
    cfg = write_config(pytester, "prod.yaml", "prod.jsonl",
                       gate="{min_pass_at_1: 0.5}" if verdict == "gate" else "")
    score_only = "humaneval_score_only = true\n" if verdict == "score-only" else ""
    pytester.makeini(f"[pytest]\nhumaneval_config = {cfg}\n{score_only}")
    pytester.makepyfile(test_own="def test_own():\n    assert True\n")
    green = pytester.runpytest("-p", "no:xdist", *NO_CACHE)
    green.assert_outcomes(passed=20, failed=1)
    assert green.ret == pytest.ExitCode.OK
    pytester.makepyfile(test_own="def test_own():\n    assert False\n")
    red = pytester.runpytest("-p", "no:xdist", *NO_CACHE)
    red.assert_outcomes(passed=19, failed=2)
    assert red.ret == pytest.ExitCode.TESTS_FAILED
    pytester.makepyfile(test_own="import nonexistent_module\n")
    broken = pytester.runpytest("-p", "no:xdist", "--continue-on-collection-errors", *NO_CACHE)
    assert broken.ret == pytest.ExitCode.TESTS_FAILED


def test_compare_refuses_different_things(pytester, tmp_path):
    """``compare`` refuses reports of different things."""
    first = {"dataset": {"label": "a", "digest": "sha256:aaa"}, "problems": {"T": {"n": 1, "c": 1}}}
    second = {"dataset": {"label": "b", "digest": "sha256:bbb"}, "problems": {"T": {"n": 1, "c": 0}}}
    (tmp_path / "a.json").write_text(json.dumps(first))
    (tmp_path / "b.json").write_text(json.dumps(second))
    (tmp_path / "broken.json").write_text("{")
    assert cli(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 2
    assert cli(["compare", str(tmp_path / "a.json"), str(tmp_path / "broken.json")]) == 2


# -- a refused baseline says which settings differ ------------------------------------------------------------

def canonical_answers(request, index):
    if request.method == "GET":
        return models()
    problem = next(p for p in PROBLEMS if p.prompt.strip() in request.prompt_text)
    text = f"```python\n{problem.prompt}{problem.canonical_solution}```"
    return choices([text] * request.body.get("n", 1))


def live_config(pytester, server, name: str, params: str, gate: str = "") -> str:
    path = pytester.path / name
    path.write_text(f"target: {{mode: runtime, endpoint: '{server.url}', model: {MODEL}}}\n"
                    f"params: {{allow_code_execution: true, limit: 2{params}}}\n" + (f"gate: {gate}\n" if gate else ""))
    return str(path)


@pytest.mark.slow
def test_other_protocol_names_differences(pytester):
    """A baseline of another protocol is refused, naming every setting that differs."""
    with FakeOpenAI(canonical_answers) as server:
        greedy = live_config(pytester, server, "greedy.yaml", ", protocol: greedy")
        pytester.runpytest("--humaneval-config", greedy, "-p", "no:xdist", "--humaneval-report", "greedy.json",
                           *NO_CACHE).assert_outcomes(passed=2)
        sent = len(server.requests)
        hot = live_config(pytester, server, "hot.yaml", ", n: 2, k: [1, 2], temperature: 0.8, top_p: 0.95, "
                                                        "max_tokens: 1024, stop: ['###']",
                          "{baseline: greedy.json}")
        result = pytester.runpytest("--humaneval-config", hot, "-p", "no:xdist", *NO_CACHE)
        assert len(server.requests) == sent  # refused before anything was asked
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(errors) == 1
    assert errors[0].startswith(f"ERROR: gate.baseline: {pytester.path / 'greedy.json'}: refusing to compare runs "
                                "that measured different things: the baseline is ")
    assert errors[0].endswith(
        "; they differ in params.n (baseline 1, this run 2), params.temperature (baseline 0, this run 0.8), "
        "params.top_p (baseline unset, this run 0.95), params.k (baseline [1], this run [1, 2]), "
        'params.max_tokens (baseline 512, this run 1024), params.stop (baseline the default, this run ["###"])')

    # A report of an earlier version records less, and says so.
    old = read_report(pytester.path / "greedy.json")
    del old["dataset"]["settings"], old["run"]["protocol"]
    (pytester.path / "old.json").write_text(json.dumps(old))
    result = pytester.runpytest("--humaneval-config", hot, "--humaneval-baseline", "old.json", "-p", "no:xdist",
                                *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: gate.baseline: *old.json: refusing to compare runs that measured different things: *; they differ "
        "in params.n (baseline 1, this run 2), params.temperature (baseline 0, this run 0.8), params.k (baseline "
        "[[]1[]], this run [[]1, 2[]]); the baseline was written by an earlier pytest-humaneval, which does not "
        "record params.top_p, params.max_tokens, params.stop, params.system_prompt, params.extra_body, "
        "params.memory_mb, params.retry: rerun it with this version to see which of them differ"])


def labelled_run(pytester, name: str, params: str) -> str:
    (pytester.path / f"{name}.jsonl").write_text("".join(
        json.dumps({"task_id": p.task_id, "completion": p.canonical_solution}) + "\n" for p in PROBLEMS[:3]))
    (pytester.path / f"{name}.yaml").write_text(f"target: {{mode: samples, samples: {name}.jsonl, allow_subset: true}}\n"
                                                f"params: {{allow_code_execution: true{params}}}\n")
    result = pytester.runpytest("--humaneval-config", f"{name}.yaml", "-p", "no:xdist", "--humaneval-report",
                                f"{name}.json", *NO_CACHE)
    result.assert_outcomes(passed=3)
    return str(pytester.path / f"{name}.json")


@pytest.mark.slow
def test_compare_names_samples_settings(pytester, capsys):
    """``compare`` names the settings of two labelled samples files."""
    cold = labelled_run(pytester, "cold", ", temperature: 0.2, top_p: 0.95")
    hot = labelled_run(pytester, "hot", ", temperature: 0.8, top_p: 0.95")
    unlabelled = labelled_run(pytester, "unlabelled", "")
    assert cli(["compare", cold, hot]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "; they differ in params.temperature (baseline 0.2, this run 0.8)")
    assert cli(["compare", cold, unlabelled]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "; they differ in params.temperature (baseline 0.2, this run not known), "
        "params.top_p (baseline 0.95, this run not known)")


def test_differences_leave_out_consequences():
    """The differences say what differs, and leave out what follows from it."""
    from pytest_humaneval.scoring.gate import compared_settings, differences

    def report(**settings):
        return {"dataset": {"name": settings.pop("name", "openai_humaneval"), "settings": settings,
                            "partial": None},
                "run": {"mode": "samples", "n": 1, "k": [1]}, "problems": {"HumanEval/0": {}, "HumanEval/1": {}}}

    humaneval = compared_settings(report(timeout_s=3.0, memory_mb=2048, retry=False))
    plus = compared_settings(report(name="humanevalplus", timeout_s=3.0, memory_mb=2048, retry=False, evalplus={
        "dataset_sha256": "ab" * 32, "suites": True, "min_time_limit_s": 4.0, "time_limit_factor": 4.0}))
    assert differences(humaneval, plus) == "they differ in dataset (baseline 'openai_humaneval', this run " \
                                           "'humanevalplus')"
    other = dict(humaneval, problems=["HumanEval/2", "HumanEval/3"])
    assert differences(humaneval, other) == "they differ in problems (baseline 2, this run 2; 2 only in the baseline)"
    assert differences(humaneval, dict(humaneval)).startswith("no setting the reports record differs, so the "
                                                              "problems' own text does")
