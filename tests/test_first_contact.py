"""What a newcomer tripped on, second round: each of these surprised a user of 6e0b5ca."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fake_openai import MODEL, FakeOpenAI, Reply, models
from sessions import NO_CACHE, read_report

MOCK = "target: {mode: mock}\n"


def test_a_json_array_instead_of_jsonl_says_what_jsonl_is(pytester):
    rows = [{"task_id": "HumanEval/0", "completion": "    return True\n"}]
    (pytester.path / "samples.jsonl").write_text(json.dumps(rows, indent=2))
    (pytester.path / "run.yaml").write_text("target: {mode: samples, samples: samples.jsonl}\n"
                                            "params: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *samples.jsonl:1: expected one JSON object per line (JSONL), found what "
                                 "looks like a JSON array*"])


def test_markdown_to_the_github_job_summary_appends(pytester, monkeypatch):
    summary = pytester.path / "step_summary.md"
    summary.write_text("## an earlier step's section\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    (pytester.path / "run.yaml").write_text(MOCK)
    pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-markdown", str(summary), "-q", *NO_CACHE)
    text = summary.read_text()
    assert text.startswith("## an earlier step's section\n") and "pass@1" in text
    # any other file is written afresh, as every other output is
    other = pytester.path / "other.md"
    other.write_text("old\n")
    pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-markdown", str(other), "-q", *NO_CACHE)
    assert not other.read_text().startswith("old")


def test_compare_into_a_reader_that_stops_early_ends_quietly(pytester):
    (pytester.path / "run.yaml").write_text(MOCK)
    for name in ("a.json", "b.json"):
        pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-report", name, "-q", *NO_CACHE)
    reader_gone = subprocess.Popen([sys.executable, "-m", "pytest_humaneval", "compare", "a.json", "b.json"],
                                   cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reader_gone.stdout.close()  # type: ignore[union-attr]  # as `| head -0` does, before it writes a line
    stderr = reader_gone.stderr.read()  # type: ignore[union-attr]
    assert reader_gone.wait(timeout=60) == 0
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_the_mock_replay_counts_failing_and_not_run_samples_apart_and_ends_with_the_score(pytester):
    (pytester.path / "run.yaml").write_text(MOCK)
    result = pytester.runpytest("--humaneval-config", "run.yaml", "-p", "no:xdist", *NO_CACHE)
    report_counts = result.parseoutcomes()
    failing = report_counts.get("failed", 0) + report_counts.get("errors", 0)
    result.stdout.fnmatch_lines([f"not run   {report_counts['skipped']} sample(s), e.g. *",
                                 f"failing   {failing} sample(s):",
                                 f"details   {failing} failing samples are the score*"])
    slowest = next(line for line in result.outlines if line.startswith("slowest"))
    assert " 0 ms" not in slowest, slowest  # never-run samples are not slow samples
    # the last line before pytest's outcome line is the score
    assert result.outlines[-2].startswith("HumanEval pass@1 0.689  coverage "), result.outlines[-3:]


def test_with_q_a_run_whose_every_generation_failed_says_so(pytester, monkeypatch):
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test-first-contact")

    def script(request, index):
        if request.method == "GET":
            return models()
        return Reply(500, {"error": {"message": "overloaded"}})

    with FakeOpenAI(script) as server:
        (pytester.path / "run.yaml").write_text(
            f"target: {{mode: runtime, endpoint: '{server.url}', model: {MODEL}, credentials_ref: env:TEST_LLM_KEY}}\n"
            "params: {allow_code_execution: true, limit: 3}\n")
        result = pytester.runpytest("--humaneval-config", "run.yaml", "-q", "-p", "no:xdist",
                                    "--humaneval-report", "r.json", *NO_CACHE)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["humaneval: requested 3/3: 0 generated, 3 failed *",
                                 "pass@1 0.000  coverage 0/3 * GENERATION FAILED 3/3*"])
    assert read_report(pytester.path / "r.json")["counts"]["not_run"] == 3


def test_a_protocol_warning_points_at_the_users_config_line(pytester):
    rows = [{"task_id": "HumanEval/0", "completion": "    return True\n"}] * 2
    (pytester.path / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (pytester.path / "run.yaml").write_text("target: {mode: samples, samples: samples.jsonl}\n"
                                            "params:\n  allow_code_execution: true\n  temperature: 0.8\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "-p", "no:xdist", *NO_CACHE)
    result.stdout.fnmatch_lines(["*run.yaml:4: PytestConfigWarning: pytest-humaneval: *", "*temperature: 0.8*"])
    result.stdout.no_fnmatch_line("*pytest_humaneval/plugin.py*")
    quiet = pytester.runpytest("--humaneval-config", "run.yaml", "-p", "no:xdist", "-W",
                               "ignore::pytest.PytestConfigWarning", *NO_CACHE)
    quiet.stdout.no_fnmatch_line("*PytestConfigWarning*")


def test_a_one_line_json_array_says_what_jsonl_is_too(pytester):
    rows = [{"task_id": "HumanEval/0", "completion": "    return True\n"}]
    (pytester.path / "samples.jsonl").write_text(json.dumps(rows))  # what json.dump writes by default
    (pytester.path / "run.yaml").write_text("target: {mode: samples, samples: samples.jsonl}\n"
                                            "params: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *samples.jsonl:1: expected a JSON object with task_id and completion, "
                                 "found list of 1 objects: a JSON array on one line; expected one JSON object per "
                                 "line (JSONL)*"])


def test_compare_with_something_else_than_a_report_says_so_without_pythons_words(tmp_path, capsys):
    from pytest_humaneval.__main__ import main as cli

    array = tmp_path / "array.json"
    array.write_text("[1, 2]")
    assert cli(["compare", str(array), str(array)]) == 2
    err = capsys.readouterr().err
    assert "expected a pytest-humaneval report (a JSON object), found list" in err and "indices" not in err
