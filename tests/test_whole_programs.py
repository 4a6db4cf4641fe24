"""Whole programs run as written, answers in tags, and a team's own extraction hook: real pytest sessions, real
sandboxes, a real loopback server for the live ones."""

from __future__ import annotations

import json

import pytest
from fake_openai import MODEL, FakeOpenAI, chat, models
from sessions import NO_CACHE, read_report

from pytest_humaneval.data.dataset import load_problems

PROBLEMS = {p.task_id: p for p in load_problems()[1]}
FUTURE = "from __future__ import annotations\n\n"


def body(task_id: str) -> str:
    """The canonical solution as a whole program of its own: the prompt's stub and docstring left out."""
    problem = PROBLEMS[task_id]
    return f"def {problem.entry_point}(*args):\n    return _solution(*args)\n\n\ndef _solution" + \
        problem.prompt.split(f"def {problem.entry_point}", 1)[1].split(":\n", 1)[0] + ":\n" + \
        problem.canonical_solution


def rows_of(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def samples_session(pytester, rows: list[dict], *args: str) -> pytest.RunResult:
    (pytester.path / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (pytester.path / "samples.yaml").write_text(
        "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n")
    return pytester.runpytest("--humaneval-config", "samples.yaml", "--humaneval-results", "results.jsonl",
                              *args, *NO_CACHE)


def test_solution_rows_run_as_written(pytester):
    canonical = PROBLEMS["HumanEval/0"].prompt + PROBLEMS["HumanEval/0"].canonical_solution
    rows = [
        {"task_id": "HumanEval/0", "solution": FUTURE + canonical},  # a __future__ line must come first
        # a helper of the prompt redefined: the program's own is the one it runs
        {"task_id": "HumanEval/38", "solution": "def encode_cyclic(s):\n    raise RuntimeError('mine')\n\n"
                                                "def decode_cyclic(s):\n    return encode_cyclic(encode_cyclic(s))\n"},
        # an import placed above the function, as a chat model writes it
        {"task_id": "HumanEval/2", "solution": "import math\n\n\ndef truncate_number(number):\n"
                                               "    return number - math.floor(number)\n"},
        # no prompt in front: the prompt's import is not there, as EvalPlus runs it
        {"task_id": "HumanEval/1", "solution": "def separate_paren_groups(s: List[str]):\n    return []\n"},
    ]
    result = samples_session(pytester, rows)
    result.assert_outcomes(passed=2, failed=2)
    by_task = {row["task_id"]: row for row in rows_of(pytester.path / "results.jsonl")}
    assert by_task["HumanEval/0"]["status"] == "passed"
    assert by_task["HumanEval/38"]["detail"].startswith("RuntimeError: mine (at completion line 2: raise ")
    assert by_task["HumanEval/2"]["status"] == "passed"
    assert by_task["HumanEval/1"]["detail"].startswith("NameError: name 'List' is not defined (at completion line 1")
    assert all(by_task[row["task_id"]]["solution"] == row["solution"] for row in rows)


@pytest.mark.slow
def test_results_file_reads_back(pytester):
    """A results file of whole programs reads back to the same verdicts."""
    rows = [{"task_id": "HumanEval/0", "solution": FUTURE + body("HumanEval/0")},
            {"task_id": "HumanEval/2", "solution": FUTURE + "def truncate_number(x):\n    return 0.0\n"}]
    samples_session(pytester, rows).assert_outcomes(passed=1, failed=1)
    first = rows_of(pytester.path / "results.jsonl")
    (pytester.path / "again.jsonl").write_text((pytester.path / "results.jsonl").read_text())
    (pytester.path / "samples.yaml").write_text(
        "target: {mode: samples, samples: again.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n")
    again = pytester.runpytest("--humaneval-config", "samples.yaml", "--humaneval-results", "results.jsonl",
                               *NO_CACHE)
    again.assert_outcomes(passed=1, failed=1)
    assert [(r["status"], r["solution"]) for r in rows_of(pytester.path / "results.jsonl")] == \
        [(r["status"], r["solution"]) for r in first]


# -- live: answers in tags, whole programs, a team's own hook -----------------------------------------------

def serve(answer):
    def script(request, index):
        if request.method == "GET":
            return models()
        problem = next(p for p in PROBLEMS.values() if p.prompt.strip() in request.prompt_text)
        return chat(answer(problem))

    return script


def live_config(pytester, server, limit: int = 3) -> str:
    path = pytester.path / "live.yaml"
    path.write_text(f"target: {{mode: runtime, endpoint: '{server.url}', model: {MODEL}}}\n"
                    f"params: {{allow_code_execution: true, limit: {limit}}}\n")
    return str(path)


def r1_zero(problem) -> str:
    """The R1-Zero template's answer: thinking, then the program indented in answer tags, no fence."""
    program = FUTURE + problem.prompt + problem.canonical_solution
    return ("<think>\nThe prompt asks for a function. I will write it.\n</think>\n<answer>\n"
            + "".join("    " + line if line.strip() else line for line in program.splitlines(True)) + "</answer>")


@pytest.mark.slow
@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_tagged_future_line_answers_pass(pytester, workers):
    """Answers in tags with a from __future__ line pass."""
    with FakeOpenAI(serve(r1_zero)) as server:
        result = pytester.runpytest("--humaneval-config", live_config(pytester, server), "--humaneval-results",
                                    "results.jsonl", "--humaneval-report", "r.json", *workers, *NO_CACHE)
    result.assert_outcomes(passed=3)
    for row in rows_of(pytester.path / "results.jsonl"):
        assert row["solution"].startswith(FUTURE), "the __future__ line stays first"
        assert row["reasoning"] == "The prompt asks for a function. I will write it."
        assert row["detail"] == "took the <answer> block"
    assert read_report(pytester.path / "r.json")["measurements"]["human-eval.pass_at_1"]["value"] == 1.0


HOOK = '''
import re

def pytest_humaneval_extract(answer, entry_point, prompt):
    found = re.search(r"<solution>(.*?)</solution>", answer, re.DOTALL)
    if "HumanEval/1" in answer:
        return 42
    return found.group(1) if found else None
'''


@pytest.mark.slow
def test_extract_hook(pytester):
    """A pytest_humaneval_extract hook takes the code, or leaves it to the plugin."""
    pytester.makeconftest(HOOK)

    def answer(problem):
        code = problem.prompt + problem.canonical_solution
        if problem.task_id == "HumanEval/0":
            return f"Here:\n<solution>\n{code}</solution>\nDone."  # the team's format
        if problem.task_id == "HumanEval/1":
            return "HumanEval/1 " + code  # the hook returns a non-string
        return f"```python\n{code}```"  # left to the plugin

    with FakeOpenAI(serve(answer)) as server:
        result = pytester.runpytest("--humaneval-config", live_config(pytester, server), "--humaneval-results",
                                    "results.jsonl", "-rs", *NO_CACHE)
    result.assert_outcomes(passed=2, skipped=1)
    by_task = {row["task_id"]: row for row in rows_of(pytester.path / "results.jsonl")}
    assert by_task["HumanEval/0"]["detail"] == "taken by a pytest_humaneval_extract hook"
    assert by_task["HumanEval/2"]["status"] == "passed"
    assert by_task["HumanEval/1"]["status"] == "not_run"
    assert by_task["HumanEval/1"]["detail"] == (
        "generation failed: the code could not be taken out of the answer: TypeError: pytest_humaneval_extract: "
        "expected a string (the code) or None, found int")


def test_hook_wrong_argument_refused(pytester):
    """A hook with a wrong argument name is refused by pytest."""
    pytester.makeconftest("def pytest_humaneval_extract(text, entry_point):\n    return None\n")
    (pytester.path / "mock.yaml").write_text("target: {mode: mock}\nparams: {limit: 1}\n")
    result = pytester.runpytest("--humaneval-config", "mock.yaml", *NO_CACHE)
    assert result.ret != 0
    output = result.stdout.str() + result.stderr.str()
    assert "pytest_humaneval_extract" in output
    assert "Argument(s) {'text'} are declared in the hookimpl but can not be found in the hookspec" in output
