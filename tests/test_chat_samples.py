"""Samples files of raw chat answers (``target.extract``, and the warning that names it) and bigcode-evaluation-
harness's ``generations_<task>.json`` (real pytest sessions)."""

from __future__ import annotations

import json

import pytest
from sessions import NO_CACHE, read_report

from pytest_humaneval.completions.sources import _looks_like_chat
from pytest_humaneval.data.dataset import load_problems

PROBLEMS = load_problems()[1]
WARNING = "*look like raw chat answers*set target.extract: true (or --humaneval-set target.extract=true)*"


def chat_answer(index: int) -> str:
    problem = PROBLEMS[index]
    return (f"<think>The usual loop will do.</think>Here is the implementation of the function:\n\n```python\n"
            f"{problem.prompt}{problem.canonical_solution}```\n\nIt checks every pair.")


def session(pytester: pytest.Pytester, samples: str, content: str, target: str = "", *args: str) -> pytest.RunResult:
    (pytester.path / samples).write_text(content)
    (pytester.path / "run.yaml").write_text(f"target: {{mode: samples, samples: {samples}, allow_subset: true"
                                            f"{target}}}\nparams: {{allow_code_execution: true}}\n")
    return pytester.runpytest("--humaneval-config", "run.yaml", "-p", "no:xdist", "--humaneval-report", "r.json",
                              "--humaneval-results", "results.jsonl", *args, *NO_CACHE)


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def chat_rows() -> list[dict]:
    return [{"task_id": PROBLEMS[i].task_id, "completion": chat_answer(i)} for i in (0, 1, 2)]


@pytest.mark.slow
def test_chat_answers_warn_and_name_the_key(pytester):
    """Raw chat answers run as written and fail; a warning names target.extract."""
    result = session(pytester, "samples.jsonl", jsonl(chat_rows()))
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([WARNING.replace("*look", "*3 of 3 samples of *samples.jsonl look")])


@pytest.mark.slow
@pytest.mark.parametrize("how", ["config", "option"])
def test_extract_takes_the_code_out(pytester, how):
    """target.extract (or --humaneval-set) takes the code out of each answer as runtime mode does: they pass, the
    results rows record the code that ran, and no warning is given."""
    args = ("--humaneval-set", "target.extract=true") if how == "option" else ()
    result = session(pytester, "samples.jsonl", jsonl(chat_rows()), ", extract: true" if how == "config" else "",
                     *args)
    result.assert_outcomes(passed=3)
    result.stdout.no_fnmatch_line(WARNING)
    rows = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    assert rows[0]["solution"].endswith(PROBLEMS[0].canonical_solution) and "```" not in rows[0]["solution"]
    assert "Here is" not in rows[0]["completion"]


def test_extract_uses_the_sessions_hook(pytester):
    """A pytest_humaneval_extract hook takes the code as in runtime mode; one that raises costs its sample."""
    pytester.makeconftest("""
        def pytest_humaneval_extract(answer, entry_point, prompt):
            if entry_point == "truncate_number":
                raise ValueError("no code in this one")
            return answer.split("<code>")[1]
    """)
    rows = [{"task_id": "HumanEval/0", "completion": "Sure!<code>" + PROBLEMS[0].canonical_solution},
            {"task_id": "HumanEval/2", "completion": "<code>    return number % 1.0\n"}]
    result = session(pytester, "samples.jsonl", jsonl(rows), ", extract: true", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*not_run: the code could not be taken out of the answer: ValueError: no code in "
                                 "this one*"])


@pytest.mark.slow
def test_plain_completions_get_no_warning(pytester):
    """Completions with a comment in prose get no warning, nor does a file where one answer in twenty-two is a
    refusal (the model's score, not a file of chat answers)."""
    rows = [{"task_id": p.task_id, "completion": p.canonical_solution} for p in PROBLEMS[:20]]
    rows.append({"task_id": "HumanEval/0", "completion": "    # Here is the loop over every pair.\n    return True\n"})
    rows.append({"task_id": "HumanEval/1", "completion": "Sorry, I cannot generate a response for this prompt."})
    result = session(pytester, "samples.jsonl", jsonl(rows))
    result.assert_outcomes(passed=20, failed=2)
    result.stdout.no_fnmatch_line(WARNING)


@pytest.mark.parametrize(("text", "chat"), [
    ("```python\ndef f():\n    pass\n```", True),
    ("Sure, here is the function you asked for:\n\ndef f():\n    pass\n", True),
    ("<think>hmm</think>\ndef f(): pass\n", True),
    ("    return sorted(set(l))\n", False),
    ("\n    # Sort the list and remove the duplicates\n    return sorted(set(l))\n", False),
    ('def f():\n    """Here is a docstring with several words."""\n', False),
    ("import math\n", False),
])
def test_what_looks_like_a_chat_answer(text, chat):
    assert _looks_like_chat(text) is chat


def bigcode(indices, extra=()) -> list:
    """bigcode-evaluation-harness's humaneval task: each generation is its prompt (stripped) and the model's
    code, a list per problem in the dataset's order."""
    return [[PROBLEMS[i].prompt.strip() + "\n" + PROBLEMS[i].canonical_solution, *extra] for i in indices]


@pytest.mark.slow
def test_bigcode_generations_are_whole_programs(pytester):
    generations = bigcode(range(164), [PROBLEMS[0].prompt + "    return None\n"])
    generations[5] = [generations[5][0], None]
    result = session(pytester, "generations_humaneval.json", json.dumps(generations), "", "-rs", "-q")
    result.assert_outcomes(passed=164, failed=163, skipped=1)
    report = read_report(pytester.path / "r.json")
    assert report["dataset"]["label"] == "openai_humaneval full (164/164 problems)"
    assert report["problems"]["HumanEval/5"]["statuses"] == {"passed": 1, "not_run": 1}
    result.stdout.fnmatch_lines(["*not_run: no solution: null in the samples file*"])


def test_bigcode_generations_of_a_limit_are_a_subset(pytester):
    """bigcode's --limit 3 writes the first 3 lists: a subset, refused unless allowed."""
    (pytester.path / "generations_humaneval.json").write_text(json.dumps(bigcode(range(3))))
    (pytester.path / "run.yaml").write_text("target: {mode: samples, samples: generations_humaneval.json}\n"
                                            "params: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *generations_humaneval.json: expected samples for every problem of "
                                 "openai_humaneval (164), found none for HumanEval/3, * (161 of 164 missing)*"])
    with_limit = pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-set", "params.limit=3", *NO_CACHE)
    with_limit.assert_outcomes(passed=3)


@pytest.mark.parametrize(("generations", "error"), [
    ([["x"]] * 165, "generations_humaneval.json: expected at most 164 lists of generations (bigcode's format: one "
                    "list per problem of the dataset, in its order), found 165"),
    ([["x"], "y"], "generations_humaneval.json: [[]1]: expected a list of generations (strings) for HumanEval/1, "
                   'found "y"'),
    ([["x"], ["y", 3]], "generations_humaneval.json: [[]1][[]1] (HumanEval/1): solution: expected a string (the whole "
                        "program) or null, found 3"),
])
def test_bad_bigcode_file_is_one_error(pytester, generations, error):
    result = session(pytester, "generations_humaneval.json", json.dumps(generations))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: *{error}"])
