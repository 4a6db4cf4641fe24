"""A benchmark session reads like a report: real pytest sessions (pytester), serial and with xdist, whose output is
counted line by line. (The same budget on the 1,640 real CodeGen completions: ``python bench/terminal_lines.py``.)"""

from __future__ import annotations

import json
import re

import pytest
from sessions import NO_CACHE

FAILING = 150  # samples of a synthetic run in which every sample fails
LINE_BUDGET = 70  # its whole output: header, progress, the HumanEval section, the outcome
SCORE_WITHIN = 30  # pass@1 among the last lines


def failing_run(pytester: pytest.Pytester, count: int = FAILING) -> str:
    rows = [{"task_id": f"HumanEval/{i}", "completion": "    return None\n"} for i in range(count)]
    (pytester.path / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    config = pytester.path / "humaneval.yaml"
    config.write_text("target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n")
    return str(config)


def sample_lines(lines: list[str]) -> list[str]:
    """The lines pytest writes per failing sample: failure block headers and short-summary lines."""
    return [line for line in lines if re.match(r"^(FAILED|ERROR) .*HumanEval/", line) or
            re.match(r"^_+ .*HumanEval/\d+ sample \d+ _+$", line)]


@pytest.mark.slow
@pytest.mark.parametrize("dist", [("-p", "no:xdist"), ("-n", "2")])
def test_failing_run_is_short(pytester, dist):
    """A failing benchmark run is a short report, with the score at the end."""
    result = pytester.runpytest("--humaneval-config", failing_run(pytester), *dist, *NO_CACHE)
    result.assert_outcomes(failed=FAILING)
    lines = result.outlines
    assert len(lines) <= LINE_BUDGET, "\n".join(lines)
    assert sample_lines(lines) == [], "no failure block or FAILED line per sample"
    score = max(i for i, line in enumerate(lines) if line.startswith("score     pass@1 0.000"))
    assert score >= len(lines) - SCORE_WITHIN
    assert re.match(rf"^=+ {FAILING} failed in .* =+$", lines[-1]), lines[-1]  # the outcome, counting every sample
    result.stdout.fnmatch_lines([
        f"failing   {FAILING} sample(s):",
        "  HumanEval/0[[]0[]] assertion_failed: AssertionError (at test line *",
        f"  ... and {FAILING - 10} more: --humaneval-results PATH or --humaneval-html PATH keeps every sample",
        f"details   {FAILING} failing samples are the score, not broken tests: -rf lists one line each, "
        "--tb=short or -v pytest's failure blocks",
    ])


@pytest.mark.slow
def test_section_points_to_files(pytester):
    """The section points to the files that hold every sample."""
    result = pytester.runpytest("--humaneval-config", failing_run(pytester, 12), "-p", "no:xdist",
                                "--humaneval-results", "results.jsonl", *NO_CACHE)
    result.stdout.fnmatch_lines(["  ... and 2 more: every sample is in the files below", "results   results.jsonl"])
    assert len((pytester.path / "results.jsonl").read_text().splitlines()) == 12


@pytest.mark.slow
@pytest.mark.parametrize(("options", "blocks"), [(("-rf",), False), (("--tb=no", "-rf"), False),
                                                 (("--tb=short",), True), (("-v",), True), (("-rA",), True)])
def test_details_on_request(pytester, options, blocks):
    """Asking pytest for details gives them back."""
    result = pytester.runpytest("--humaneval-config", failing_run(pytester, 3), "-p", "no:xdist", *options,
                                *NO_CACHE)
    result.assert_outcomes(failed=3)
    shown = sample_lines(result.outlines)
    failed = [line for line in shown if line.startswith("FAILED")]
    assert len(failed) == 3 and all(line.startswith(f"FAILED humaneval.yaml::HumanEval/{i}[0] - assertion_failed")
                                    for i, line in enumerate(failed)), result.stdout.str()
    headers = [line for line in shown if line.startswith("_")]
    assert len(headers) == (3 if blocks else 0), result.stdout.str()


@pytest.mark.slow
@pytest.mark.parametrize("dist", [("-p", "no:xdist"), ("-n", "2")])
def test_other_tests_output_unchanged(pytester, dist):
    """The other tests of the session keep pytest's usual output."""
    config = failing_run(pytester, 20)
    pytester.makepyfile(test_other="def test_broken():\n    assert 1 + 1 == 3\n\n\ndef test_fine():\n    pass\n")
    result = pytester.runpytest("test_other.py", "--humaneval-config", config, *dist, *NO_CACHE)
    result.assert_outcomes(failed=21, passed=1)
    result.stdout.fnmatch_lines(["*= FAILURES =*", "*_ test_broken _*", "*assert*== 3*", "*= HumanEval =*",
                                 "*= short test summary info =*", "FAILED test_other.py::test_broken - assert*"])
    assert sample_lines(result.outlines) == []
