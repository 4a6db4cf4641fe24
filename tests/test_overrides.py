"""--humaneval-set KEY=VALUE: the keys people change per run, from the command line, recorded in the report."""

from __future__ import annotations

import json

import pytest
from fake_openai import MODEL, FakeOpenAI, chat, models
from sessions import NO_CACHE, read_report

from pytest_humaneval.data.dataset import bundled_path, load_problems

PROBLEMS = load_problems()[1][:3]


def samples(pytester, name: str, solved: bool) -> None:
    rows = [{"task_id": p.task_id, "completion": p.canonical_solution if solved else "    return None\n"}
            for p in PROBLEMS]
    (pytester.path / name).write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.mark.slow
@pytest.mark.parametrize("dist", [("-p", "no:xdist"), ("-n", "2")])
def test_samples_and_limit_from_command_line(pytester, dist):
    """A samples file and a limit from the command line replace the file's, and are recorded."""
    samples(pytester, "wrong.jsonl", solved=False)
    samples(pytester, "right.jsonl", solved=True)
    (pytester.path / "conf").mkdir()
    (pytester.path / "conf" / "run.yaml").write_text(
        "target: {mode: samples, samples: ../wrong.jsonl}\nparams: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", "conf/run.yaml", "--humaneval-set", "target.samples=right.jsonl",
                                "--humaneval-set", "params.limit=2", "--humaneval-report", "r.json", *dist,
                                *NO_CACHE)
    result.assert_outcomes(passed=2)  # the command line's file (relative to where pytest started), 2 problems
    report = read_report(pytester.path / "r.json")
    assert report["run"]["overrides"] == {"target.samples": "right.jsonl", "params.limit": "2"}
    assert report["planned"] == 2 and report["measurements"]["human-eval.pass_at_1"]["value"] == 1.0


def test_dataset_from_command_line(pytester):
    dataset = pytester.path / "mine.jsonl"
    dataset.write_text("".join(json.dumps({"task_id": p.task_id, "prompt": p.prompt, "entry_point": p.entry_point,
                                           "canonical_solution": p.canonical_solution, "test": p.test}) + "\n"
                               for p in PROBLEMS))
    (pytester.path / "run.yaml").write_text("target: {mode: mock}\nparams: {execute: true}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-set", "dataset=mine.jsonl",
                                "--humaneval-report", "r.json", "-p", "no:xdist", *NO_CACHE)
    result.assert_outcomes(passed=3)
    assert read_report(pytester.path / "r.json")["dataset"]["problems"] == 3
    assert bundled_path().name != dataset.name


def test_model_from_command_line(pytester, monkeypatch):
    """The model from the command line is the one asked and reported."""
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test-overrides")
    problems = {p.prompt.strip(): p for p in PROBLEMS}

    def script(request, index):
        if request.method == "GET":
            return models(MODEL, "other-model")
        problem = next(p for text, p in problems.items() if text in request.prompt_text)
        return chat(f"```python\n{problem.prompt}{problem.canonical_solution}```")

    with FakeOpenAI(script) as server:
        (pytester.path / "run.yaml").write_text(
            f"target: {{mode: runtime, endpoint: '{server.url}', model: {MODEL}, credentials_ref: env:TEST_LLM_KEY}}\n"
            "params: {allow_code_execution: true, limit: 3}\n")
        result = pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-set", "target.model=other-model",
                                    "--humaneval-set", "params.n=2", "--humaneval-report", "r.json",
                                    "-p", "no:xdist", *NO_CACHE)
        asked = {post.body["model"] for post in server.posts()}
    result.assert_outcomes(passed=6)
    assert asked == {"other-model"}
    run = read_report(pytester.path / "r.json")["run"]
    assert run["model"] == "other-model" and run["n"] == 2
    assert run["overrides"] == {"target.model": "other-model", "params.n": "2"}


@pytest.mark.parametrize(("setting", "expected"), [
    ("params.timeout_s=9", "--humaneval-set: expected KEY=VALUE with KEY one of target.model, target.endpoint, "
                           "target.samples, dataset, params.limit, params.n, found 'params.timeout_s=9'"),
    ("params.n", "--humaneval-set: expected KEY=VALUE*found 'params.n'"),
    ("params.limit=zero", "*run.yaml: params.limit: expected *, found 'zero'* (set by --humaneval-set params.limit=...)"),
])
def test_bad_setting_is_named(pytester, setting, expected):
    """A bad setting is one usage error, naming it."""
    (pytester.path / "run.yaml").write_text("target: {mode: mock}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-set", setting, *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {expected}"])
