"""Answers shaped like today's chat and reasoning models, end to end: real pytest sessions against a real
loopback server, the model's real answer being the canonical solution and its drafts wrong."""

from __future__ import annotations

import json

import pytest
from fake_openai import MODEL, FakeOpenAI, chat, models
from sessions import NO_CACHE, read_report

from pytest_humaneval.data.dataset import load_problems

PROBLEMS = load_problems()[1]
KEY = "sk-test-SECRET-reasoning"


def fenced(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


def right(problem) -> str:
    return problem.prompt + problem.canonical_solution


def wrong(problem) -> str:
    """A draft that defines the entry point and fails every test (returns None)."""
    return f"def {problem.entry_point}(*args):\n    return None\n"


SHAPES = {
    # a reasoning model that writes its thinking into content, with a wrong draft inside it
    "HumanEval/0": lambda p: chat(f"<think>\nFirst try:\n{fenced(wrong(p))}\nHmm, that returns None.\n</think>\n\n"
                                  f"Final answer:\n{fenced(right(p))}"),
    # a usage example in its own block before the implementation
    "HumanEval/1": lambda p: chat(f"Usage:\n{fenced(f'print({p.entry_point}.__doc__)')}\n"
                                  f"Implementation:\n{fenced(right(p))}"),
    # a draft, then "on second thought" the final version
    "HumanEval/2": lambda p: chat(f"{fenced(wrong(p))}\nOn second thought, the final version:\n{fenced(right(p))}"),
    # a server with a reasoning parser: the thinking (and its draft) in reasoning_content
    "HumanEval/3": lambda p: chat(fenced(right(p)), reasoning_content=f"Draft:\n{fenced(wrong(p))}",
                                  usage={"prompt_tokens": 90, "completion_tokens": 400,
                                         "completion_tokens_details": {"reasoning_tokens": 350}}),
}


def serve(shapes):
    def script(request, index):
        if request.method == "GET":
            return models()
        problem = next(p for p in PROBLEMS if p.prompt.strip() in request.prompt_text)
        return shapes[problem.task_id](problem)

    return script


def config(pytester, server, params="") -> str:
    path = pytester.path / "thinking.yaml"
    path.write_text(f"target: {{mode: runtime, endpoint: '{server.url}', model: {MODEL}, "
                    "credentials_ref: env:TEST_LLM_KEY}\n"
                    f"params: {{allow_code_execution: true, limit: 4{params}}}\n")
    return str(path)


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("TEST_LLM_KEY", KEY)


def results(pytester) -> dict[str, dict]:
    rows = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    return {row["task_id"]: row for row in rows}


@pytest.mark.slow
def test_todays_shapes_keep_reasoning(pytester):
    """The shapes of today's models pass, and keep their reasoning."""
    with FakeOpenAI(serve(SHAPES)) as server:
        result = pytester.runpytest("--humaneval-config", config(pytester, server), "-n", "2",
                                    "--humaneval-results", "results.jsonl", "--humaneval-report", "r.json",
                                    *NO_CACHE)
    result.assert_outcomes(passed=4)
    rows = results(pytester)
    assert rows["HumanEval/0"]["reasoning"].startswith("First try:") and "<think>" in rows["HumanEval/0"]["raw"]
    assert rows["HumanEval/3"]["reasoning"].startswith("Draft:") and "Draft" not in rows["HumanEval/3"]["raw"]
    assert rows["HumanEval/3"]["reasoning_tokens"] == 350
    assert rows["HumanEval/1"]["detail"] == "took code block 2 of 2 (the last that defines separate_paren_groups)"
    assert rows["HumanEval/2"]["detail"] == "took code block 2 of 2 (the last that defines truncate_number)"
    assert all(row["finish_reason"] == "stop" for row in rows.values())
    measured = read_report(pytester.path / "r.json")["measurements"]
    assert measured["human-eval.reasoning_tokens"] == {"value": 350, "class": "usage", "official": False}
    assert measured["human-eval.truncated"]["value"] == 0
    assert "truncated" not in result.stdout.str()


@pytest.mark.slow
def test_cut_answers_are_flagged(pytester):
    """Answers cut at max_tokens run, and are flagged, counted and warned about."""
    def cut(problem):  # the whole function, then cut mid-way, as a server does at max_tokens
        return chat(f"```python\n{right(problem)[:-25]}", finish_reason="length")

    shapes = dict(SHAPES, **{"HumanEval/2": cut})
    with FakeOpenAI(serve(shapes)) as server:
        result = pytester.runpytest("--humaneval-config", config(pytester, server, ", max_tokens: 300"),
                                    "-p", "no:xdist", "--humaneval-results", "results.jsonl",
                                    "--humaneval-report", "r.json", *NO_CACHE)
    result.assert_outcomes(passed=3, failed=1)
    row = results(pytester)["HumanEval/2"]
    assert row["status"] in ("runtime_error", "assertion_failed") and row["finish_reason"] == "length"
    assert row["detail"].startswith("truncated at max_tokens (finish_reason: length); ")
    assert read_report(pytester.path / "r.json")["measurements"]["human-eval.truncated"] == {
        "value": 1, "class": "usage", "official": False}
    result.stdout.fnmatch_lines(["WARNING: 1/4 answers (25%) were cut at max_tokens (finish_reason: length): "
                                 "raise params.max_tokens (300)*"])


@pytest.mark.slow
def test_cut_answer_passes_by_last_block(pytester):
    """A runaway answer cut at max_tokens passes by its last complete block."""
    def runaway(problem):  # the whole function, then again and again until max_tokens cut a copy mid-way
        copies = "".join(f"\nAgain, the function:\n{fenced(right(problem))}" for _ in range(8))
        return chat(f"Here is the function:\n{fenced(right(problem))}{copies}\nAgain:\n```python\n"
                    f"{right(problem)[:-25]}", finish_reason="length")

    shapes = dict(SHAPES, **{"HumanEval/2": runaway})
    with FakeOpenAI(serve(shapes)) as server:
        result = pytester.runpytest("--humaneval-config", config(pytester, server), "-p", "no:xdist",
                                    "--humaneval-results", "results.jsonl", *NO_CACHE)
    result.assert_outcomes(passed=4)
    row = results(pytester)["HumanEval/2"]
    assert row["status"] == "passed" and row["finish_reason"] == "length"
    assert row["detail"] == ("truncated at max_tokens (finish_reason: length); took code block 9 of 10 (the last "
                             "complete one that defines truncate_number; 1 later one is cut off or does not compile)")


@pytest.mark.slow
def test_provider_options_reach_server(pytester):
    """``extra_body`` and ``system_prompt`` reach the server, and change the digest and the label."""
    plain = {task: (lambda p: chat(fenced(right(p)))) for task in SHAPES}
    reports = {}
    for name, params in (("plain", ""), ("options", ", system_prompt: 'Code only.', "
                                                    "extra_body: {chat_template_kwargs: {enable_thinking: false}}")):
        with FakeOpenAI(serve(plain)) as server:
            result = pytester.runpytest("--humaneval-config", config(pytester, server, params), "-p", "no:xdist",
                                        "--humaneval-report", f"{name}.json", *NO_CACHE)
        result.assert_outcomes(passed=4)
        reports[name] = read_report(pytester.path / f"{name}.json")["dataset"]
        bodies = [r.body for r in server.posts()]
    assert all(b["chat_template_kwargs"] == {"enable_thinking": False} for b in bodies)
    assert all(b["messages"][0]["content"] == "Code only." for b in bodies)
    assert reports["plain"]["digest"] != reports["options"]["digest"]
    assert reports["plain"]["label"] == "openai_humaneval sample (4/164 problems)"
    assert reports["options"]["label"] == ('openai_humaneval sample (4/164 problems, own system prompt, '
                                           'extra_body {"chat_template_kwargs":{"enable_thinking":false}})')
