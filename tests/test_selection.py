"""A selection that is not the whole plan (-k, --lf, --deselect, node ids) is labelled partial; a gate fails on it."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from sessions import NO_CACHE, QUIET_REWRITE, read_report

from pytest_humaneval.__main__ import main as cli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SOLVED_0 = {"task_id": "HumanEval/0", "completion": "    return any(abs(a - b) < threshold for i, a in "
            "enumerate(numbers) for b in numbers[i + 1:])\n"}
WRONG_0 = {"task_id": "HumanEval/0", "completion": "    return False\n"}
SOLVED_2 = {"task_id": "HumanEval/2", "completion": "    return number % 1.0\n"}
CRASH_2 = {"task_id": "HumanEval/2", "completion": "    return number / 0\n"}


def samples_config(pytester: pytest.Pytester, gate: str = "", name: str = "humaneval.yaml") -> Path:
    rows = [SOLVED_0, WRONG_0, CRASH_2, SOLVED_2]
    (pytester.path / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    path = pytester.path / name
    path.write_text("target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n"
                    + (f"gate: {gate}\n" if gate else ""))
    return path


@pytest.mark.slow
def test_deselection_is_partial(pytester):
    """Deselecting the failing samples is a partial run, which fails the gate."""
    # The case: examples/samples.yaml without its 4 failing samples gave pass@1 1.000, coverage 6/6
    # and "gate: PASS" against a baseline of the whole file. (With xdist: the --lf and --deselect test.)
    dist = ("-p", "no:xdist")
    for name in ("samples.yaml", "samples.jsonl"):
        shutil.copy(EXAMPLES / name, pytester.path / name)
    full = pytester.runpytest("--humaneval-config", "samples.yaml", *dist, "--humaneval-report", "full.json",
                              *NO_CACHE)
    full.assert_outcomes(passed=6, failed=4)
    baseline = read_report(pytester.path / "full.json")
    assert baseline["dataset"]["partial"] is None
    with open(pytester.path / "samples.yaml", "a") as handle:
        handle.write("gate: {baseline: full.json, min_pass_at_1: 0.5}\n")
    result = pytester.runpytest("--humaneval-config", "samples.yaml", *dist, "-k", "not [1]", "--junitxml",
                                "junit.xml", "--humaneval-report", "partial.json", "--humaneval-markdown", "p.md",
                                *NO_CACHE)
    assert result.ret == 1
    label = "openai_humaneval partial (5/164 problems; 5/10 planned samples selected by -k)"
    result.stdout.fnmatch_lines([f"dataset   {label}  sha256:*", "*HumanEval gate: FAIL*",
                                 "FAIL  whole plan selected * 0.500 vs 1.000  (5/10 planned samples selected by "
                                 "-k; gate.allow_partial: true or --humaneval-allow-partial gates a subset)"])
    report = read_report(pytester.path / "partial.json")
    assert report["dataset"]["label"] == label
    assert report["dataset"]["partial"] == {"selected": 5, "planned": 10, "by": ["-k"]}
    assert report["dataset"]["digest"] != baseline["dataset"]["digest"] and report["dataset"]["full"] is False
    assert report["gate"]["passed"] is False and report["planned"] == 5
    assert label in (pytester.path / "p.md").read_text()
    suite = {p.get("name"): p.get("value") for p in ET.parse(pytester.path / "junit.xml").getroot().iter("property")}
    assert suite["human-eval.dataset_label"] == label and suite["human-eval.gate"] == "FAIL"
    assert suite["human-eval.partial"] == "5/10 planned samples selected by -k"
    # A partial report is never taken for the full one: compare refuses it (another digest).
    assert cli(["compare", str(pytester.path / "full.json"), str(pytester.path / "partial.json")]) == 2


@pytest.mark.slow
def test_partial_run_needs_opt_in(pytester):
    """A partial run passes the gate only when the user opts in."""
    samples_config(pytester)
    pytester.runpytest("--humaneval-config", "humaneval.yaml", "-p", "no:xdist", "--humaneval-report", "base.json",
                       *NO_CACHE)
    by_config = samples_config(pytester, "{baseline: base.json, allow_partial: true}", name="subset.yaml")
    result = pytester.runpytest("--humaneval-config", str(by_config), "-p", "no:xdist", "-k", "HumanEval/2[",
                                "--humaneval-report", "r.json", *NO_CACHE)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*HumanEval gate: PASS*", "PASS  whole plan selected * 0.500 vs 1.000  (2/4 "
                                 "planned samples selected by -k; allowed by gate.allow_partial)"])
    gate = read_report(pytester.path / "r.json")["gate"]
    assert gate["comparison"]["problems"] == 1  # compared over the problems that ran
    by_option = samples_config(pytester, "{baseline: base.json}", name="plain.yaml")
    refused = pytester.runpytest("--humaneval-config", str(by_option), "-p", "no:xdist", "-k", "HumanEval/2[",
                                 *NO_CACHE)
    assert refused.ret == 1
    allowed = pytester.runpytest("--humaneval-config", str(by_option), "-p", "no:xdist", "-k", "HumanEval/2[",
                                 "--humaneval-allow-partial", *NO_CACHE)
    assert allowed.ret == 0


@pytest.mark.slow
@pytest.mark.parametrize("dist", [("-p", "no:xdist"), ("-n", "2")])
def test_lf_and_deselect_are_partial(pytester, dist):
    """--last-failed and --deselect are partial too."""
    cfg = samples_config(pytester, "{min_pass_at_1: 0.0}")
    pytester.runpytest("--humaneval-config", str(cfg), *dist, *QUIET_REWRITE)
    lf = pytester.runpytest("--humaneval-config", str(cfg), *dist, "--lf", "--humaneval-report", "lf.json",
                            *QUIET_REWRITE)
    assert lf.ret == 1
    assert read_report(pytester.path / "lf.json")["dataset"]["partial"] == {"selected": 2, "planned": 4,
                                                                           "by": ["--lf"]}
    deselect = pytester.runpytest("--humaneval-config", str(cfg), *dist, "--deselect",
                                  "humaneval.yaml::HumanEval/0[1]", "--humaneval-report", "d.json", *NO_CACHE)
    assert deselect.ret == 1
    assert read_report(pytester.path / "d.json")["dataset"]["partial"]["by"] == ["--deselect"]


def test_whole_plan_is_not_partial(pytester):
    """A whole plan is not partial, even with a selection option."""
    cfg = samples_config(pytester, "{min_pass_at_1: 0.0}")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "-k", "HumanEval",
                                "--humaneval-report", "r.json", *NO_CACHE)
    assert result.ret == 0
    dataset = read_report(pytester.path / "r.json")["dataset"]
    assert dataset["partial"] is None and dataset["label"] == "openai_humaneval subset (2/164 problems)"


def test_allow_partial_is_validated(pytester):
    samples_config(pytester)
    cfg = samples_config(pytester, "{min_pass_at_1: 0.5, allow_partial: 1}", name="bad.yaml")
    result = pytester.runpytest("--humaneval-config", str(cfg), *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {cfg}: gate.allow_partial: expected true or false, found 1"])
    plain = samples_config(pytester, name="plain.yaml")
    result = pytester.runpytest("--humaneval-config", str(plain), "--humaneval-allow-partial", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --humaneval-allow-partial: expected a gate (a gate: section, "
                                 "--humaneval-baseline or --humaneval-min-pass-at-1), found none"])


def test_node_ids_are_partial(pytester):
    """Node ids on the command line are partial too."""
    cfg = samples_config(pytester)
    result = pytester.runpytest(f"{cfg}::HumanEval/0[0]", f"{cfg}::HumanEval/2[1]", "--humaneval-config", str(cfg),
                                "-p", "no:xdist", "--humaneval-report", "r.json", *NO_CACHE)
    result.assert_outcomes(passed=2)
    partial = read_report(pytester.path / "r.json")["dataset"]["partial"]
    assert partial == {"selected": 2, "planned": 4, "by": ["node ids"]}


def test_partial_is_never_labelled_full(pytester):
    """A partial selection of the full plan is never labelled full."""
    cfg = pytester.path / "humaneval.yaml"
    cfg.write_text("target: {mode: mock}\nparams: {execute: true}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "-k", "HumanEval/12[",
                                "--humaneval-report", "r.json", *NO_CACHE)
    result.assert_outcomes(passed=1, deselected=163)
    dataset = read_report(pytester.path / "r.json")["dataset"]
    assert dataset["label"] == "openai_humaneval partial (1/164 problems; 1/164 planned samples selected by -k)"
    assert dataset["full"] is False
