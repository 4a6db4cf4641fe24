"""What a newcomer tripped on, second round: each of these surprised a user of 6e0b5ca."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fake_openai import MODEL, FakeOpenAI, Reply, models
from sessions import NO_CACHE, read_report

MOCK = "target: {mode: mock}\n"


def test_json_array_explains_jsonl(pytester):
    """A JSON array instead of JSONL says what JSONL is."""
    rows = [{"task_id": "HumanEval/0", "completion": "    return True\n"}]
    (pytester.path / "samples.jsonl").write_text(json.dumps(rows, indent=2))
    (pytester.path / "run.yaml").write_text("target: {mode: samples, samples: samples.jsonl, allow_subset: true}\n"
                                            "params: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *samples.jsonl:1: expected one JSON object per line (JSONL), found what "
                                 "looks like a JSON array*"])


def test_markdown_appends_to_job_summary(pytester, monkeypatch):
    """Markdown to the GitHub job summary appends."""
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


@pytest.mark.slow
def test_compare_into_closed_pipe_is_quiet(pytester):
    """``compare`` into a reader that stops early ends quietly."""
    (pytester.path / "run.yaml").write_text(MOCK)
    for name in ("a.json", "b.json"):
        pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-report", name, "-q", *NO_CACHE)
    reader_gone = subprocess.Popen([sys.executable, "-m", "pytest_humaneval", "compare", "a.json", "b.json"],
                                   cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reader_gone.stdout.close()  # type: ignore[union-attr]  # as `| head -0` does, before it writes a line
    stderr = reader_gone.stderr.read()  # type: ignore[union-attr]
    assert reader_gone.wait(timeout=60) == 0
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_mock_replay_ends_with_score(pytester):
    """The mock replay counts failing and not-run samples apart, and ends with the score."""
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


def test_q_says_every_generation_failed(pytester, monkeypatch):
    """With -q, a run whose every generation failed says so."""
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


@pytest.mark.slow
def test_protocol_warning_points_at_config(pytester):
    """A protocol warning points at the user's config line."""
    rows = [{"task_id": "HumanEval/0", "completion": "    return True\n"}] * 2
    (pytester.path / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (pytester.path / "run.yaml").write_text("target: {mode: samples, samples: samples.jsonl, allow_subset: true}\n"
                                            "params:\n  allow_code_execution: true\n  temperature: 0.8\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "-p", "no:xdist", *NO_CACHE)
    result.stdout.fnmatch_lines(["*run.yaml:4: PytestConfigWarning: pytest-humaneval: *", "*temperature: 0.8*"])
    result.stdout.no_fnmatch_line("*pytest_humaneval/session/plugin.py*")
    quiet = pytester.runpytest("--humaneval-config", "run.yaml", "-p", "no:xdist", "-W",
                               "ignore::pytest.PytestConfigWarning", *NO_CACHE)
    quiet.stdout.no_fnmatch_line("*PytestConfigWarning*")


def test_one_line_json_array_explains_jsonl(pytester):
    """A one-line JSON array says what JSONL is too."""
    rows = [{"task_id": "HumanEval/0", "completion": "    return True\n"}]
    (pytester.path / "samples.jsonl").write_text(json.dumps(rows))  # what json.dump writes by default
    (pytester.path / "run.yaml").write_text("target: {mode: samples, samples: samples.jsonl, allow_subset: true}\n"
                                            "params: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *samples.jsonl:1: expected a JSON object with task_id and completion, "
                                 "found list of 1 objects: a JSON array on one line; expected one JSON object per "
                                 "line (JSONL)*"])


def test_compare_non_report_says_so_plainly(tmp_path, capsys):
    """``compare`` with something else than a report says so, without Python's words."""
    from pytest_humaneval.__main__ import main as cli

    array = tmp_path / "array.json"
    array.write_text("[1, 2]")
    assert cli(["compare", str(array), str(array)]) == 2
    err = capsys.readouterr().err
    assert "expected a pytest-humaneval report (a JSON object), found list" in err and "indices" not in err
